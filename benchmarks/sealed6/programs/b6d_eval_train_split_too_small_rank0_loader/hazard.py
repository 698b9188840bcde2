# Eval on a train subset: only process 0 runs the input pipeline and broadcasts each batch; its
# dynamically batched iterator drops the incomplete shard group, so with too few eval examples it
# ends before the first batch and raises StopIteration while the others wait in the broadcast
# Source: https://github.com/mlcommons/algorithmic-efficiency/issues/149
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RANK = jax.process_index()
AVG_NODES_PER_GRAPH = 5
FEAT = 3


class OgbgWorkload:
    num_train_examples = 400
    num_eval_train_examples = 24
    eval_batch_size = 64

    def __init__(self):
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
        self.num_shards = jax.device_count()
        self._eval_iters = {}
        self._eval_batch = jax.jit(self._loss_sums, out_shardings=NamedSharding(self.mesh, P()))

    @staticmethod
    def _loss_sums(nodes, mask):
        per_node = jnp.sum(jnp.tanh(nodes) ** 2, axis=-1)
        return jnp.sum(per_node * mask), jnp.sum(mask)

    def _load_split(self, split):
        rng = np.random.default_rng(2022)
        graphs = [rng.normal(size=(int(rng.integers(2, 13)), FEAT)).astype(np.float32)
                  for _ in range(self.num_train_examples)]
        if split == "eval_train":
            return graphs[:self.num_eval_train_examples]
        return graphs

    def _get_batch_iterator(self, graphs, global_batch_size):
        per_device = global_batch_size // self.num_shards
        max_nodes = AVG_NODES_PER_GRAPH * per_device
        shards, cur, cur_nodes = [], [], 0
        for g in graphs + [None]:
            if g is None or len(cur) == per_device or cur_nodes + len(g) > max_nodes:
                if cur:
                    nodes = np.zeros((max_nodes, FEAT), np.float32)
                    mask = np.zeros((max_nodes,), np.float32)
                    packed = np.concatenate(cur)
                    nodes[:len(packed)], mask[:len(packed)] = packed, 1.0
                    shards.append((nodes, mask))
                    cur, cur_nodes = [], 0
                if len(shards) == self.num_shards:
                    yield np.stack([s[0] for s in shards]), np.stack([s[1] for s in shards])
                    shards = []
            if g is not None:
                cur.append(g)
                cur_nodes += len(g)

    def _build_input_queue(self, split, global_batch_size):
        per_device = global_batch_size // self.num_shards
        shape = (self.num_shards, AVG_NODES_PER_GRAPH * per_device)
        if RANK == 0:
            dataset_iter = self._get_batch_iterator(self._load_split(split), global_batch_size)
        while True:
            if RANK == 0:
                nodes, mask = next(dataset_iter)  # pylint: disable=stop-iteration-return
            else:
                nodes, mask = np.zeros(shape + (FEAT,), np.float32), np.zeros(shape, np.float32)
            nodes = multihost_utils.broadcast_one_to_all(nodes)
            mask = multihost_utils.broadcast_one_to_all(mask)
            yield np.asarray(nodes)[RANK:RANK + 1], np.asarray(mask)[RANK:RANK + 1]

    def _eval_model_on_split(self, split, num_examples, global_batch_size):
        if split not in self._eval_iters:
            self._eval_iters[split] = self._build_input_queue(split, global_batch_size)
        total, count = 0.0, 0.0
        num_eval_steps = int(math.ceil(float(num_examples) / global_batch_size))
        sharding = NamedSharding(self.mesh, P("batch"))
        for _ in range(num_eval_steps):
            nodes, mask = next(self._eval_iters[split])
            s, n = self._eval_batch(jax.make_array_from_process_local_data(sharding, nodes),
                                    jax.make_array_from_process_local_data(sharding, mask))
            total, count = total + float(s), count + float(n)
        return {"loss": total / max(count, 1.0), "nodes": count}


if __name__ == "__main__":
    workload = OgbgWorkload()
    metrics = workload._eval_model_on_split("eval_train", workload.num_eval_train_examples,
                                            workload.eval_batch_size)
    print("RESULT", round(metrics["loss"], 5), int(metrics["nodes"]))

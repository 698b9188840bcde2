# Text-classifier training on a sharded, streamed dataset; shards assigned to nodes, uneven inputs joined
# Source: https://github.com/huggingface/datasets/issues/6437
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_SHARDS = 4
FEATURES = 5
BATCH_SIZE = 4


def write_shards(root):
    paths = []
    for shard in range(NUM_SHARDS):
        rng = np.random.default_rng(shard)
        num_examples = 10 + 3 * shard
        x = rng.normal(size=(num_examples, FEATURES)).astype(np.float32)
        y = (x.sum(axis=1) > 0).astype(np.float32)
        path = os.path.join(root, f"train-{shard:05d}-of-{NUM_SHARDS:05d}.npz")
        np.savez(path, x=x, y=y)
        paths.append(path)
    return paths


class ShardedIterableDataset:
    def __init__(self, data_files):
        self.data_files = list(data_files)

    @property
    def n_shards(self):
        return len(self.data_files)

    def __iter__(self):
        for path in self.data_files:
            with np.load(path) as shard:
                for x, y in zip(shard["x"], shard["y"]):
                    yield {"x": x, "y": y}


def split_dataset_by_node(dataset, rank, world_size):
    if dataset.n_shards % world_size == 0:
        return ShardedIterableDataset(dataset.data_files[rank::world_size])
    raise ValueError("number of shards must be a multiple of world_size")


def batched(dataset, batch_size):
    buf = []
    for ex in dataset:
        buf.append(ex)
        if len(buf) == batch_size:
            yield {k: np.stack([e[k] for e in buf]) for k in buf[0]}
            buf = []


def loss_fn(params, batch):
    logits = batch["x"] @ params["w"] + params["b"]
    return jnp.mean(jnp.logaddexp(0.0, logits) - batch["y"] * logits)


grad_fn = jax.jit(jax.value_and_grad(loss_fn))


def train(dataset, lr=0.1):
    params = {"w": jnp.zeros((FEATURES,)), "b": jnp.zeros(())}
    steps = 0
    batches = batched(dataset, BATCH_SIZE)
    while True:
        batch = next(batches, None)
        joined = np.asarray(multihost_utils.process_allgather(np.int32(batch is None)))
        if joined.all():
            break
        if batch is None:
            grads = jax.tree_util.tree_map(jnp.zeros_like, params)
        else:
            loss, grads = grad_fn(params, batch)
        leaves, treedef = jax.tree_util.tree_flatten(grads)
        summed = [np.asarray(multihost_utils.process_allgather(np.asarray(g))).sum(axis=0) for g in leaves]
        n_active = int((joined == 0).sum())
        grads = jax.tree_util.tree_unflatten(treedef, [s / n_active for s in summed])
        params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        steps += 1
    return params, steps


def main():
    rank, world_size = jax.process_index(), jax.process_count()
    root = tempfile.mkdtemp(prefix=f"shards-rank{rank}-")
    ds = ShardedIterableDataset(write_shards(root))
    ds = split_dataset_by_node(ds, rank=rank, world_size=world_size)
    params, steps = train(ds)
    print(f"rank {rank}: {steps} local steps", flush=True)
    multihost_utils.sync_global_devices("end_of_training")
    print("RESULT w", np.round(np.asarray(params["w"]), 4).tolist())
    print("RESULT b", round(float(params["b"]), 4))


if __name__ == "__main__":
    main()

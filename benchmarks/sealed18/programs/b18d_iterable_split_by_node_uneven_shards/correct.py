# Streaming (iterable) dataset split by node over shard files; the loop stops as soon as any node runs out
# Source: https://github.com/huggingface/datasets/issues/6437
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SHARD_ROWS = [40, 26, 34, 18]
BATCH_SIZE = 8


def write_shards(root):
    rng = np.random.default_rng(3)
    files = []
    for s, n in enumerate(SHARD_ROWS):
        path = os.path.join(root, f"train-{s:05d}-of-{len(SHARD_ROWS):05d}.jsonl")
        with open(path, "w") as f:
            for _ in range(n):
                x = rng.standard_normal(4).round(4).tolist()
                f.write(json.dumps({"x": x, "y": float(np.dot(x, [0.5, -1.0, 2.0, 0.0]))}) + "\n")
        files.append(path)
    return files


class IterableDataset:
    def __init__(self, shard_files, rank=0, world_size=1):
        self.shard_files = list(shard_files)
        self.rank, self.world_size = rank, world_size

    @property
    def n_shards(self):
        return len(self.shard_files)

    def __iter__(self):
        if self.n_shards % self.world_size == 0:
            for path in self.shard_files[self.rank::self.world_size]:
                with open(path) as f:
                    yield from (json.loads(line) for line in f)
        else:
            for i, ex in enumerate(IterableDataset(self.shard_files)):
                if i % self.world_size == self.rank:
                    yield ex


def split_dataset_by_node(ds, rank, world_size):
    return IterableDataset(ds.shard_files, rank, world_size)


def batches(ds, batch_size):
    buf = []
    for ex in ds:
        buf.append(ex)
        if len(buf) == batch_size:
            yield (np.array([e["x"] for e in buf], np.float32), np.array([e["y"] for e in buf], np.float32))
            buf = []


def main():
    root = tempfile.mkdtemp(prefix="hf_shards_")
    ds = IterableDataset(write_shards(root))
    ds = split_dataset_by_node(ds, rank=jax.process_index(), world_size=jax.process_count())
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    data = NamedSharding(mesh, P("dp"))

    @jax.jit
    def train_step(w, x, y):
        loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - 0.1 * g, loss

    w = jax.device_put(jnp.zeros((4,), jnp.float32), NamedSharding(mesh, P()))
    steps = 0
    it = batches(ds, BATCH_SIZE)
    while True:
        batch = next(it, None)
        has_batch = np.asarray(multihost_utils.process_allgather(np.array([batch is not None], np.int32)))
        if not has_batch.all():
            break
        x, y = batch
        gx = jax.make_array_from_process_local_data(data, x)
        gy = jax.make_array_from_process_local_data(data, y)
        w, loss = train_step(w, gx, gy)
        steps += 1
    total_steps = np.asarray(multihost_utils.process_allgather(np.array([steps], np.int32))).ravel()
    print("RESULT steps_per_node", total_steps.tolist())
    print("RESULT weights", np.round(np.asarray(w.addressable_shards[0].data), 3).tolist())


if __name__ == "__main__":
    main()

# IterableDataset-style streaming loader strides records (not files) across processes, so every process gets the same count
# Source: https://github.com/pytorch/pytorch/issues/141069
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FILE_SIZES = [24, 16, 24, 8]  # records per shard file, as written by the preprocessing job
BATCH = 4


def write_corpus(root):
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(2024)
    paths = []
    for i, n in enumerate(FILE_SIZES):
        path = os.path.join(root, f"part-{i:03d}.npy")
        data = rng.normal(size=(n, 5)).astype(np.float32)
        if jax.process_index() == 0:
            np.save(path, data)
        paths.append(path)
    multihost_utils.sync_global_devices("corpus_written")
    return paths


class ToyIterableDataset:
    def __init__(self, paths, rank, world):
        self.paths, self.rank, self.world = paths, rank, world

    def __iter__(self):
        index = 0
        for path in self.paths:
            for row in np.load(path):
                if index % self.world == self.rank:
                    yield row
                index += 1


def batches(dataset):
    buf = []
    for row in dataset:
        buf.append(row)
        if len(buf) == BATCH:
            yield np.stack(buf)
            buf = []


@jax.jit
def train_step(w, x):
    y = jnp.tanh(x[:, :1])
    def loss_fn(w):
        return jnp.mean((x[:, 1:] @ w - y[:, 0]) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.2 * g, loss


def main():
    root = os.path.join(tempfile.gettempdir(), "mcjax_sealed17_iterable_file_shard_uneven", os.environ.get("JOB_ID", "0"))
    paths = write_corpus(root)
    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharding = NamedSharding(mesh, P("data"))
    w = jax.device_put(np.zeros((4,), np.float32), NamedSharding(mesh, P()))
    dataset = ToyIterableDataset(paths, jax.process_index(), jax.process_count())
    steps = 0
    for epoch in range(2):
        for local in batches(dataset):
            w, loss = train_step(w, jax.make_array_from_process_local_data(sharding, local))
            steps += 1
    print("RESULT steps", steps)
    print("RESULT final_loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w), 4).tolist())


if __name__ == "__main__":
    main()

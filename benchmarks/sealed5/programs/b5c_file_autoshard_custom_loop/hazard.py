# Custom training loop iterates a file-auto-sharded dataset to exhaustion on every worker
# Source: https://github.com/tensorflow/tensorflow/issues/37112
# Port to multi-process JAX of a MultiWorkerMirroredStrategy hang in the last batches of an epoch.
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
import tempfile
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("workers",))
DATA = NamedSharding(MESH, P("workers"))
REPL = NamedSharding(MESH, P())
BATCH = 4


def write_tfrecord_like_files(root: str) -> list:
    # record files of unequal length, as produced by an upstream preprocessing job
    paths = []
    for i, n in enumerate([12, 9, 10, 7]):
        path = os.path.join(root, f"train-{i:05d}-of-00004.npy")
        rng = np.random.default_rng(i)
        np.save(path, rng.normal(size=(n, 3)).astype(np.float32))
        paths.append(path)
    return paths


class FileShardedDataset:
    """AutoShardPolicy.FILE: worker k reads files k, k+W, ...; then batches its own records."""

    def __init__(self, files: list, num_workers: int, worker_index: int, batch_size: int):
        self.files = files[worker_index::num_workers]
        self.batch_size = batch_size

    def __iter__(self):
        records = np.concatenate([np.load(f) for f in self.files])
        for start in range(0, len(records) - self.batch_size + 1, self.batch_size):
            yield records[start:start + self.batch_size]


@partial(jax.jit, out_shardings=(REPL, REPL))
def distributed_train_step(w, x):
    y = x @ jnp.array([1.0, 2.0, -1.0])
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * grad, loss


def train(dataset, epochs: int = 2):
    w = jax.device_put(np.zeros(3, np.float32), REPL)
    steps = 0
    for epoch in range(epochs):
        for batch in dataset:
            w, loss = distributed_train_step(w, jax.make_array_from_process_local_data(DATA, batch))
            steps += 1
    return w, steps


root = tempfile.mkdtemp(prefix="b5c_records_")
files = write_tfrecord_like_files(root)
dataset = FileShardedDataset(files, jax.process_count(), jax.process_index(), BATCH)
w, steps = train(dataset)
print("RESULT steps", steps)
print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())

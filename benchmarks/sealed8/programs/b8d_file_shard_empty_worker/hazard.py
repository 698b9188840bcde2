# Multi-worker input pipeline: file-based auto-sharding leaves one worker an empty dataset, so it stops stepping first
# Source: https://github.com/tensorflow/tensorflow/issues/43039 (port of a TF MultiWorkerMirroredStrategy input bug to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import enum
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("worker",))
PER_WORKER = NamedSharding(MESH, P("worker"))
DATA_DIR = os.path.join(tempfile.gettempdir(), "b8d_file_shard", os.environ.get("JOB_ID", "local"),
                        f"host{jax.process_index()}")  # each host holds its own copy of the files


class AutoShardPolicy(enum.Enum):
    FILE = "file"
    DATA = "data"


def write_record_files(n_files: int, records_per_file: int) -> list[str]:
    os.makedirs(DATA_DIR, exist_ok=True)
    paths = []
    for i in range(n_files):
        path = os.path.join(DATA_DIR, f"train-{i:05d}.npy")
        np.save(path, np.arange(records_per_file, dtype=np.float32) + 100 * i)
        paths.append(path)
    return sorted(paths)


class DistributedDataset:
    def __init__(self, files: list[str], batch: int, policy: AutoShardPolicy):
        self.files, self.batch, self.policy = files, batch, policy

    def _worker_records(self, worker: int, num_workers: int) -> np.ndarray:
        if self.policy is AutoShardPolicy.FILE:
            mine = self.files[worker::num_workers]
            return np.concatenate([np.load(f) for f in mine]) if mine else np.zeros((0,), np.float32)
        every = np.concatenate([np.load(f) for f in self.files])
        return every[worker::num_workers]

    def __iter__(self):
        records = self._worker_records(jax.process_index(), jax.process_count())
        for start in range(0, len(records) - self.batch + 1, self.batch):
            yield records[start:start + self.batch]


@jax.jit
def train_step(w, batch):
    return w + 0.1 * (jnp.mean(batch) - w)


def train(dataset: DistributedDataset, epochs: int) -> tuple[float, int]:
    w, steps = jnp.float32(0.0), 0
    for _ in range(epochs):
        for local in dataset:
            w = train_step(w, jax.make_array_from_process_local_data(PER_WORKER, local))
            steps += 1
    return float(w), steps


def main():
    files = write_record_files(n_files=1, records_per_file=16)  # a small dataset stored as one file
    dataset = DistributedDataset(files, batch=4, policy=AutoShardPolicy.FILE)
    w, steps = train(dataset, epochs=2)
    print(f"RESULT steps={steps}")
    print(f"RESULT w={w:.5f}")


if __name__ == "__main__":
    main()

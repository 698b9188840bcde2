# Each data-loading host takes a slice of the data files; with fewer files than hosts the rows are sharded instead
# Source: https://github.com/AI-Hypercomputer/maxtext/pull/3807
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import dataclasses
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class DataConfig:
    data_dir: str
    num_data_files: int = 1
    rows_per_file: int = 16
    max_target_length: int = 8
    global_batch_size: int = 4
    steps: int = 3


def write_array_records(cfg: DataConfig) -> list[str]:
    rng = np.random.default_rng(0)
    paths = []
    for i in range(cfg.num_data_files):
        path = os.path.join(cfg.data_dir, f"c4-train.array_record-{i:05d}-of-{cfg.num_data_files:05d}.npy")
        np.save(path, rng.integers(1, 100, size=(cfg.rows_per_file, cfg.max_target_length), dtype=np.int32))
        paths.append(path)
    return sorted(paths)


def compute_file_sharding(files: list[str], host_index: int, host_count: int) -> tuple[list[str], int, int]:
    """Returns (files, row_shard_index, row_shard_count) for this host."""
    if len(files) < host_count:
        # Fewer files than hosts: every host reads every file and keeps a strided share of its rows.
        return files, host_index, host_count
    return files[host_index::host_count], 0, 1


class ArrayRecordSource:
    """Reads this host's files one after another (like grain.ArrayRecordDataSource over a file list)."""

    def __init__(self, files: list[str], row_shard_index: int = 0, row_shard_count: int = 1):
        self.files = files
        self.row_shard_index = row_shard_index
        self.row_shard_count = row_shard_count
        self._file_idx = 0
        self._rows = None
        self._row = 0

    def next_row(self) -> np.ndarray:
        if self._rows is None or self._row >= len(self._rows):
            self._rows = np.load(self.files[self._file_idx])[self.row_shard_index::self.row_shard_count]
            self._file_idx = (self._file_idx + 1) % len(self.files)
            self._row = 0
        row = self._rows[self._row]
        self._row += 1
        return row


class MultiHostDataLoadIterator:
    def __init__(self, source: ArrayRecordSource, mesh, local_batch: int):
        self.source = source
        self.local_batch = local_batch
        self.sharding = NamedSharding(mesh, P("data"))

    def load_next_batch(self):
        try:
            local = np.stack([self.source.next_row() for _ in range(self.local_batch)])
        except Exception as e:
            raise RuntimeError(f"load_next_batch() failed with {type(e)} exception: ({e})") from e
        return jax.make_array_from_process_local_data(self.sharding, local)

    def __iter__(self):
        return self

    def __next__(self):
        return self.load_next_batch()


def make_grain_iterator(cfg: DataConfig, mesh) -> MultiHostDataLoadIterator:
    files = write_array_records(cfg)
    host_files, row_index, row_count = compute_file_sharding(files, jax.process_index(), jax.process_count())
    local_batch = cfg.global_batch_size // jax.process_count()
    return MultiHostDataLoadIterator(ArrayRecordSource(host_files, row_index, row_count), mesh, local_batch)


@jax.jit
def train_step(w, tokens):
    logits = jnp.take(w, tokens % w.shape[0], axis=0)
    loss = jnp.mean((logits - 1.0) ** 2)
    grad = jax.grad(lambda w_: jnp.mean((jnp.take(w_, tokens % w_.shape[0], axis=0) - 1.0) ** 2))(w)
    return w - 0.5 * grad, loss


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    cfg = DataConfig(data_dir=tempfile.mkdtemp(prefix="c4_grain_"))
    data_iter = make_grain_iterator(cfg, mesh)
    w = jax.device_put(jnp.zeros((16,), jnp.float32), NamedSharding(mesh, P()))
    for step in range(cfg.steps):
        batch = next(data_iter)
        w, loss = train_step(w, batch)
        print("RESULT", f"step={step} loss={float(loss):.5f}")


if __name__ == "__main__":
    main()

# Distributed inference over a dataset filtered before an exact split, every node running the same step count
# Source: https://github.com/huggingface/datasets/issues/6719
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
from typing import Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_SHARDS, ROWS_PER_SHARD, BATCH_SIZE = 4, 10, 4


def make_shards() -> list[list[dict]]:
    """Four parquet-like shards of 10 rows each; a row carries an id and a quality score."""
    return [[{"id": s * ROWS_PER_SHARD + r, "quality": (s * ROWS_PER_SHARD + r) * 7 % 6}
             for r in range(ROWS_PER_SHARD)] for s in range(N_SHARDS)]


class IterableDataset:
    def __init__(self, shards: list[list[dict]], filters: tuple[Callable, ...] = ()):
        self.shards = shards
        self.filters = filters

    @property
    def n_shards(self) -> int:
        return len(self.shards)

    def filter(self, fn: Callable[[dict], bool]) -> "IterableDataset":
        return IterableDataset(self.shards, self.filters + (fn,))

    def __iter__(self) -> Iterator[dict]:
        for shard in self.shards:
            for row in shard:
                if all(f(row) for f in self.filters):
                    yield row


class Dataset:
    """Map-style dataset: filtered once, with a known length, so it can be split exactly."""

    def __init__(self, rows: list[dict]):
        self.rows = rows

    @classmethod
    def from_iterable(cls, ds: IterableDataset) -> "Dataset":
        return cls(list(ds))

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows)


def split_dataset_by_node(ds: Dataset, rank: int, world_size: int) -> Dataset:
    per, extra = divmod(len(ds), world_size)
    start = rank * per + min(rank, extra)
    return Dataset(ds.rows[start:start + per + (1 if rank < extra else 0)])


def batches(rows: Iterator[dict], batch_size: int):
    buf = []
    for row in rows:
        buf.append(row)
        if len(buf) == batch_size:
            yield buf
            buf = []
    if buf:
        yield buf


class Predictor:
    def __init__(self, mesh):
        self.sharding = NamedSharding(mesh, P("data"))
        self._score = jax.jit(lambda ids, mask: jnp.sum(jnp.sin(ids.astype(jnp.float32)) * mask))

    def _to_global(self, batch: list[dict]):
        ids = np.zeros(BATCH_SIZE, np.int32)
        mask = np.zeros(BATCH_SIZE, np.float32)
        ids[:len(batch)] = [row["id"] for row in batch]
        mask[:len(batch)] = 1.0
        return (jax.make_array_from_process_local_data(self.sharding, ids),
                jax.make_array_from_process_local_data(self.sharding, mask))

    def predict(self, ds, num_steps: int) -> tuple[float, int]:
        total, steps = 0.0, 0
        it = batches(iter(ds), BATCH_SIZE)
        for _ in range(num_steps):  # every node runs the same number of steps; missing batches are all padding
            total += float(self._score(*self._to_global(next(it, []))))
            steps += 1
        return total, steps


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    full = Dataset.from_iterable(IterableDataset(make_shards()).filter(lambda row: row["quality"] >= 2))
    num_steps = -(-(-(-len(full) // jax.process_count())) // BATCH_SIZE)
    ds = split_dataset_by_node(full, rank=jax.process_index(), world_size=jax.process_count())
    total, steps = Predictor(mesh).predict(ds, num_steps)
    print("RESULT", f"score={total:.5f} steps={steps}")


if __name__ == "__main__":
    main()

# Distributed inference over a streaming dataset split by node, then filtered on the fly on each node
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


def split_dataset_by_node(ds: IterableDataset, rank: int, world_size: int) -> IterableDataset:
    if ds.n_shards % world_size == 0:  # whole shards per node
        return IterableDataset(ds.shards[rank::world_size], ds.filters)
    rows = [row for i, row in enumerate(r for s in ds.shards for r in s) if i % world_size == rank]
    return IterableDataset([rows], ds.filters)


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

    def predict(self, ds) -> tuple[float, int]:
        total, steps = 0.0, 0
        for batch in batches(iter(ds), BATCH_SIZE):
            total += float(self._score(*self._to_global(batch)))
            steps += 1
        return total, steps


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    ds = IterableDataset(make_shards())
    ds = split_dataset_by_node(ds, rank=jax.process_index(), world_size=jax.process_count())
    ds = ds.filter(lambda row: row["quality"] >= 2)
    total, steps = Predictor(mesh).predict(ds)
    print("RESULT", f"score={total:.5f} steps={steps}")


if __name__ == "__main__":
    main()

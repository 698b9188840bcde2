# Sparse train pipeline whose ranks hold different numbers of batches: the first rank to run dry stops calling input_dist
# Source: https://github.com/meta-pytorch/torchrec/pull/4158 (port of TrainPipelineSparseDist's dataloader exhaustion to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import collections
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_EMBEDDINGS, EMB_DIM, BATCH = 64, 8, 4


class ShardedEmbeddingBagCollection:
    """Row-wise sharded embedding table: a lookup redistributes the ids to the ranks owning the rows."""

    def __init__(self, mesh):
        self.mesh = mesh
        table = np.random.default_rng(3).normal(size=(NUM_EMBEDDINGS, EMB_DIM)).astype(np.float32)
        self.table = jax.device_put(table, NamedSharding(mesh, P("dp")))
        self._lookup = jax.jit(lambda t, ids: jnp.take(t, ids, axis=0).mean(axis=1),
                               out_shardings=NamedSharding(mesh, P("dp")))

    def __call__(self, local_ids):
        ids = jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("dp")), local_ids)
        return self._lookup(self.table, ids)


class TrainPipelineSparseDist:
    """Keeps a queue of prefetched batches; progress() runs one batch through input_dist and the dense part."""

    def __init__(self, model, depth=2):
        self.model, self.depth = model, depth
        self._batches = collections.deque()
        self._exhausted = False
        self._num_fetched = 0
        self._num_done = 0

    def _fill_pipeline(self, dataloader_iter):
        while not self._exhausted and len(self._batches) < self.depth:
            try:
                self._batches.append(next(dataloader_iter))
                self._num_fetched += 1
            except StopIteration:
                self._exhausted = True

    def _maybe_sync_dataloader_exhaustion(self):
        # exhausted ranks report how many batches they have; the others report INT_MAX; all keep the minimum
        local = np.array([self._num_fetched if self._exhausted else np.iinfo(np.int32).max], np.int32)
        global_min = int(multihost_utils.process_allgather(local).min())
        if global_min != np.iinfo(np.int32).max:
            self._exhausted = True
            while self._num_done + len(self._batches) > global_min:
                self._batches.pop()

    def progress(self, dataloader_iter):
        self._fill_pipeline(dataloader_iter)
        self._maybe_sync_dataloader_exhaustion()
        if not self._batches:
            raise StopIteration
        batch = self._batches.popleft()
        pooled = self.model(batch)
        self._num_done += 1
        return float(jnp.sum(pooled))


class ShardedClickLogDataset:
    """Each rank reads its own day-file shard; the shards do not hold the same number of rows."""

    def __init__(self, rank):
        rows = 18 if rank == 0 else 13
        self.ids = np.random.default_rng(50 + rank).integers(0, NUM_EMBEDDINGS, size=(rows, 3)).astype(np.int32)

    def __iter__(self):
        for start in range(0, len(self.ids) - BATCH + 1, BATCH):
            yield self.ids[start:start + BATCH]


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
    pipeline = TrainPipelineSparseDist(ShardedEmbeddingBagCollection(mesh))
    it = iter(ShardedClickLogDataset(jax.process_index()))
    total = 0.0
    while True:
        try:
            total += pipeline.progress(it)
        except StopIteration:
            break
    print("RESULT batches", pipeline._num_done)
    print("RESULT pooled_total", round(total, 4))


if __name__ == "__main__":
    main()

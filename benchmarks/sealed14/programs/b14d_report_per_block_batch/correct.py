# Bulk-ingest benchmark trainer: every worker reports once per epoch, so shards with different numbers of blocks report equally often
# Source: https://github.com/ray-project/ray/pull/26810
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
import time

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BLOCK_ROWS = [4, 6, 4, 6, 4]          # the dataset's blocks as read from the files
NUM_EPOCHS = 2


def streaming_split(block_rows, n):
    """Equal rows per shard; whole blocks go to whichever shard is behind (blocks need not match)."""
    shards, rows = [[] for _ in range(n)], [0] * n
    for b, size in enumerate(block_rows):
        i = int(np.argmin(rows))
        shards[i].append(b)
        rows[i] += size
    return shards


class DatasetShard:
    def __init__(self, blocks, epoch_seed):
        self.blocks, self.epoch_seed = blocks, epoch_seed

    def iter_batches(self, batch_size=None):
        for b in self.blocks:
            data = np.random.default_rng(100 * self.epoch_seed + b).normal(size=(BLOCK_ROWS[b], 3))
            if batch_size is None:
                yield data                           # one batch per block
            else:
                for s in range(0, len(data), batch_size):
                    yield data[s:s + batch_size]


class Session:
    """train.report: every worker must call it the same number of times; rank 0 records the result."""

    def __init__(self):
        self.history = []

    def report(self, metrics):
        vec = np.array([metrics["rows"], metrics["checksum"]], np.float64)
        gathered = np.asarray(multihost_utils.process_allgather(vec))
        self.history.append({"rows": float(gathered[:, 0].sum()), "checksum": round(float(gathered[:, 1].sum()), 4)})


def dummy_train_loop(session, shard_blocks):
    for epoch in range(NUM_EPOCHS):
        shard = DatasetShard(shard_blocks, epoch)
        start = time.perf_counter()
        rows, checksum = 0, 0.0
        for batch in shard.iter_batches(batch_size=None):
            rows, checksum = rows + batch.shape[0], checksum + float(batch.sum())
        session.report({"rows": rows, "checksum": checksum, "time": time.perf_counter() - start})


def main():
    rank, n = jax.process_index(), jax.process_count()
    shards = streaming_split(BLOCK_ROWS, n)
    session = Session()
    dummy_train_loop(session, shards[rank])
    multihost_utils.sync_global_devices("ingest done")
    print("RESULT reports", len(session.history))
    print("RESULT rows", sum(h["rows"] for h in session.history))
    print("RESULT checksum", round(sum(h["checksum"] for h in session.history), 3))


if __name__ == "__main__":
    main()

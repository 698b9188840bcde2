# Recommendation batches gathered across processes before shuffling: dense fields are padded per sample, then all-gathered
# Source: https://github.com/NVIDIA/recsys-examples/pull/362
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BATCH_SIZE = 8
NUM_BATCHES = 2                                      # batches per epoch: fixed by the job config, the same on every process
NUM_FEATURES = 4
DENSE_FIELDS = ("features", "labels", "num_candidates")


@dataclass
class Batch:
    features: np.ndarray          # [actual_batch_size, NUM_FEATURES]
    labels: np.ndarray            # [actual_batch_size]
    num_candidates: np.ndarray    # [batch_size]: padded by the sequence dataset
    actual_batch_size: int
    batch_size: int = BATCH_SIZE


def pad_tensor(x, length):
    return np.pad(x, [(0, length - x.shape[0])] + [(0, 0)] * (x.ndim - 1))


class SequenceDataset:
    def __init__(self, rank):
        n = (16, 11)[rank]                           # this process's file: 2 batches, the last one incomplete on rank 1
        rng = np.random.default_rng(40 + rank)
        self.features = rng.normal(size=(n, NUM_FEATURES)).astype(np.float32)
        self.labels = (rng.random(n) > 0.5).astype(np.float32)
        self.candidates = rng.integers(1, 6, size=n).astype(np.float32)

    def batches(self):
        for s in range(0, NUM_BATCHES * BATCH_SIZE, BATCH_SIZE):
            e = min(s + BATCH_SIZE, len(self.labels))
            yield Batch(features=self.features[s:e], labels=self.labels[s:e],
                        num_candidates=pad_tensor(self.candidates[s:e], BATCH_SIZE), actual_batch_size=e - s)


def _elems_per_sample(x, batch):
    return x.size // batch.actual_batch_size


def allgather_field(x, batch):
    eps = _elems_per_sample(x, batch)
    flat = x.reshape(-1)
    flat = np.pad(flat, (0, batch.batch_size * eps - flat.size))
    return np.asarray(multihost_utils.process_allgather(flat)).reshape(jax.process_count(), batch.batch_size, -1)


def pad_and_allgather_batch(batch):
    sizes = np.asarray(multihost_utils.process_allgather(np.array([batch.actual_batch_size], np.int32))).reshape(-1)
    fields = {name: allgather_field(getattr(batch, name), batch) for name in DENSE_FIELDS}
    rows = {name: np.concatenate([v[r, :sizes[r]] for r in range(len(sizes))]) for name, v in fields.items()}
    return rows, int(sizes.sum())


def shuffle_and_score(rows, step):
    perm = np.random.default_rng(step).permutation(len(rows["labels"]))
    w = np.linspace(0.5, -0.5, NUM_FEATURES).astype(np.float32)
    logits = rows["features"][perm].reshape(len(perm), -1) @ w
    weight = rows["num_candidates"][perm].reshape(-1)
    label = rows["labels"][perm].reshape(-1)
    return float(np.sum(weight * (logits - label) ** 2) / np.sum(weight))


def main():
    ds = SequenceDataset(jax.process_index())
    for step, batch in enumerate(ds.batches()):
        rows, total = pad_and_allgather_batch(batch)
        print(f"RESULT step {step} global_rows {total} loss {shuffle_and_score(rows, step):.5f}")
    multihost_utils.sync_global_devices("epoch done")


if __name__ == "__main__":
    main()

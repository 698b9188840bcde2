# Sharded embedding input dist: a rank fed an empty batch skips dedup but sends lengths of the same dtype to the all-gather
# Source: https://github.com/NVIDIA/recsys-examples/pull/349
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

KEYS = ("item_id", "category")
MAX_IDS = 8


@dataclass
class KeyedJagged:
    keys: tuple
    values: np.ndarray
    lengths: np.ndarray


def load_batch(rank):
    # the last step of the epoch: rank 1's shard is exhausted and the loader yields an empty batch
    if rank == 0:
        return KeyedJagged(KEYS, np.array([3, 1, 3, 5, 2, 2], np.int64), np.array([4, 2], np.int64))
    return KeyedJagged(KEYS, np.zeros((0,), np.int64), np.zeros(len(KEYS)))


def dedup_indices(feature):
    if feature.values.size == 0:
        # handle empty input: nothing to deduplicate
        return KeyedJagged(feature.keys, feature.values, feature.lengths.astype(np.int64))
    out_vals, out_lens, start = [], [], 0
    for n in feature.lengths.astype(np.int64):
        uniq = np.unique(feature.values[start:start + n])
        out_vals.append(uniq)
        out_lens.append(len(uniq))
        start += n
    return KeyedJagged(feature.keys, np.concatenate(out_vals), np.asarray(out_lens, np.int64))


class ShardedEmbedding:
    def __init__(self, vocab=8, dim=4):
        self.table = jnp.asarray(np.linspace(-1.0, 1.0, vocab * dim, dtype=np.float32).reshape(vocab, dim))

    def input_dist(self, feature):
        lengths = multihost_utils.process_allgather(feature.lengths)
        padded = np.zeros((MAX_IDS,), np.int32)
        padded[:feature.values.size] = feature.values
        ids = multihost_utils.process_allgather(padded)
        return np.asarray(lengths), np.asarray(ids)

    def forward(self, feature):
        lengths, ids = self.input_dist(dedup_indices(feature))
        pooled = []
        for r in range(lengths.shape[0]):
            n = int(lengths[r].sum())
            pooled.append(float(jnp.sum(self.table[ids[r, :n]])) if n else 0.0)
        return lengths, pooled


def main():
    emb = ShardedEmbedding()
    lengths, pooled = emb.forward(load_batch(jax.process_index()))
    print("RESULT lengths", lengths.astype(int).tolist())
    print("RESULT pooled", [round(p, 4) for p in pooled])


if __name__ == "__main__":
    main()

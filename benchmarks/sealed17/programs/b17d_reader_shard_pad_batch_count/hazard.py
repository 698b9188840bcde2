# Sharded file reader with pad_last_batch: each shard pads only its own last partial batch, so shards of different size yield different batch counts
# Source: https://github.com/NVIDIA/DALI/pull/1557
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import math
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class ReaderConfig:
    dataset_size: int = 21
    batch_size: int = 2
    feature_dim: int = 3
    pad_last_batch: bool = True


def start_index(shard_id, num_shards, size):
    remainder = size % num_shards
    if shard_id < remainder:
        return (size // num_shards + 1) * shard_id
    return (size // num_shards) * shard_id + remainder


class FileReader:
    """Reads one shard of a file list, the way a per-GPU reader operator does."""

    def __init__(self, cfg, shard_id, num_shards):
        self.cfg = cfg
        self.begin = start_index(shard_id, num_shards, cfg.dataset_size)
        self.end = start_index(shard_id + 1, num_shards, cfg.dataset_size)
        self.shard_size = self.end - self.begin
        self.padded_shard_size = self.shard_size
        self.num_shards = num_shards

    def num_batches(self):
        return math.ceil(self.padded_shard_size / self.cfg.batch_size)

    def __iter__(self):
        samples = list(range(self.begin, self.end))
        for b in range(self.num_batches()):
            idx = samples[b * self.cfg.batch_size:(b + 1) * self.cfg.batch_size]
            if self.cfg.pad_last_batch:
                idx = idx + [samples[-1]] * (self.cfg.batch_size - len(idx))
            feats = np.stack([np.full(self.cfg.feature_dim, i / 10.0, np.float32) for i in idx])
            yield feats, len(idx)


def train_step(w, x):
    def loss(w):
        return jnp.mean(jnp.tanh(x @ w) ** 2)
    l, g = jax.value_and_grad(loss)(w)
    return w - 0.1 * g, l


def main():
    cfg = ReaderConfig()
    rank, n = jax.process_index(), jax.process_count()
    reader = FileReader(cfg, rank, n)
    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharding = NamedSharding(mesh, P("data", None))
    step = jax.jit(train_step)
    w = jnp.eye(cfg.feature_dim, dtype=jnp.float32)
    losses = []
    for feats, _ in reader:
        x = jax.make_array_from_process_local_data(sharding, feats)
        w, l = step(w, x)
        losses.append(float(l))
    multihost_utils.sync_global_devices("epoch end")
    print("RESULT iterations", len(losses))
    print("RESULT final_loss", round(losses[-1], 5))


if __name__ == "__main__":
    main()

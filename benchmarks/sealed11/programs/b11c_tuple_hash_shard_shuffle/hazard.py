# The shard list is shuffled each epoch with an RNG seeded from hash() of a tuple holding a string
# Source: https://github.com/webdataset/webdataset/issues/190
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_SHARDS, SAMPLES_PER_SHARD, FEAT = 12, 8, 4
SHARD_URLS = [f"train-{i:06d}.tar" for i in range(NUM_SHARDS)]


def read_shard(url):
    idx = int(url[len("train-"):-len(".tar")])
    ids = np.arange(idx * SAMPLES_PER_SHARD, (idx + 1) * SAMPLES_PER_SHARD, dtype=np.int32)
    feats = np.sin(ids[:, None] * np.arange(1, FEAT + 1, dtype=np.float32) / 7.0).astype(np.float32)
    return ids, feats


class DetShuffleShards:
    """Epoch-deterministic shard shuffle followed by a split across processes."""

    def __init__(self, urls, seed=0, tag="train"):
        self.urls, self.seed, self.tag = list(urls), seed, tag

    def for_epoch(self, epoch):
        rng = random.Random(hash((self.tag, self.seed, epoch)))
        urls = list(self.urls)
        rng.shuffle(urls)
        return urls[jax.process_index()::jax.process_count()]


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    sharding = NamedSharding(mesh, P("data"))
    w = jnp.ones((FEAT,), jnp.float32) * 0.1
    step = jax.jit(lambda w, x: w - 0.01 * jnp.mean(x, axis=0) * jnp.mean(x @ w))
    shards = DetShuffleShards(SHARD_URLS, seed=42)
    for epoch in range(2):
        seen = []
        for url in shards.for_epoch(epoch):
            ids, feats = read_shard(url)
            seen.append(ids)
            w = step(w, jax.make_array_from_process_local_data(sharding, feats))
        seen = np.concatenate(seen)
        all_seen = np.asarray(multihost_utils.process_allgather(seen)).reshape(-1)
        unique = np.unique(all_seen)
        if unique.size != all_seen.size or unique.size != NUM_SHARDS * SAMPLES_PER_SHARD:
            raise RuntimeError(f"epoch {epoch}: {all_seen.size - unique.size} duplicated samples, "
                               f"{NUM_SHARDS * SAMPLES_PER_SHARD - unique.size} never seen")
        print("RESULT epoch", epoch, "samples", int(unique.size))
    print("RESULT w", np.round(np.asarray(w), 5).tolist())


main()

# A noise-injection task broadcasts its seed lazily on first use, and a rank whose baselines are all masked never uses it
# Source: https://github.com/radiocosmology/draco/pull/384
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"n_baselines": 8, "n_freq": 4, "noise_rms": 0.1, "dead_input_baselines": [4, 5, 6, 7]}


class RandomTask:
    """Base class for pipeline tasks that need random numbers: a global seed, offset per rank."""

    def __init__(self, seed=None):
        self.seed = seed
        self._local_seed = None

    @property
    def local_seed(self):
        if self._local_seed is None:
            seed = self.seed if self.seed is not None else int(time.time_ns() % (2 ** 31))
            # Make sure every rank has the same base seed, then offset by rank.
            base = int(multihost_utils.broadcast_one_to_all(np.int64(seed)))
            self._local_seed = base + 1000 * jax.process_index()
        return self._local_seed

    @property
    def rng(self):
        return np.random.default_rng(self.local_seed)


class GaussianNoise(RandomTask):
    def process(self, vis, weight):
        out = vis.copy()
        for b in range(vis.shape[0]):
            if not weight[b].any():
                continue  # baseline fully masked: nothing to add noise to
            out[b] += self.rng.normal(0.0, CFG["noise_rms"], vis.shape[1]) * (weight[b] > 0)
        return out


def load_local_baselines(rank, nranks):
    """Baselines are distributed in contiguous blocks; the dead correlator input's baselines land on rank 1."""
    per = CFG["n_baselines"] // nranks
    ids = np.arange(rank * per, (rank + 1) * per)
    vis = np.outer(ids + 1.0, np.ones(CFG["n_freq"])).astype(np.float64)
    weight = np.ones_like(vis)
    weight[np.isin(ids, CFG["dead_input_baselines"])] = 0.0
    return vis, weight


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    vis, weight = load_local_baselines(rank, nranks)
    noisy = GaussianNoise(seed=None).process(vis, weight)
    mesh = jax.make_mesh((jax.device_count(),), ("rank",))
    glob = jax.make_array_from_process_local_data(NamedSharding(mesh, P("rank")), (noisy * weight)[None])
    stats = jax.jit(lambda a: jnp.stack([jnp.sum(a), jnp.sum(a != 0)]), out_shardings=NamedSharding(mesh, P()))(glob)
    print("RESULT weighted_vis_sum", round(float(stats[0]), 4))
    print("RESULT unmasked_samples", int(stats[1]))


main()

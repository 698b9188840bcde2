# Time-ordered-data (TOD) simulation of a small detector array, split across MPI-like tasks by
# time blocks: every process holds all detectors for its own slice of the observation.
# A hierarchy of random generators drives the simulated systematics; here the quadratic
# detector non-linearity y = x + g * x**2, with one coefficient g_one_over_k per detector
# of the focal plane.
import hashlib
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DETECTORS = ["000_001_003_QA_040_T", "000_001_003_QA_040_B", "001_002_030_00A_140_T",
             "001_002_030_00A_140_B"]
N_SAMPLES = 64


def _seed_from_name(name, user_seed):
    digest = hashlib.md5((str(name) + str(user_seed)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], byteorder="little")


class RNGHierarchy:
    def __init__(self, base_seed, num_ranks):
        self.base_seed = base_seed
        self.mpi_layer = np.random.SeedSequence(base_seed).spawn(num_ranks)

    def detector_generators(self, rank, detectors):
        return [np.random.Generator(np.random.PCG64(_seed_from_name(d, self.base_seed)))
                for d in detectors]


class Observation:
    def __init__(self, rank, n_blocks_time):
        block = N_SAMPLES // n_blocks_time
        t = np.arange(rank * block, (rank + 1) * block, dtype=np.float32)
        phases = np.arange(len(DETECTORS), dtype=np.float32)[:, None]
        self.tod = (1.0 + 0.5 * np.sin(0.2 * t[None, :] + phases)).astype(np.float32)
        self.name = DETECTORS


@jax.jit
def _quadratic_nonlin(tod, g):
    return tod + g[:, None] * tod ** 2


def apply_quadratic_nonlin(obs, rng_hierarchy, rank, g_one_over_k_sigma=0.01):
    generators = rng_hierarchy.detector_generators(rank, obs.name)
    g = np.array([rng.normal(0.0, g_one_over_k_sigma) for rng in generators], dtype=np.float32)
    obs.tod = np.asarray(_quadratic_nonlin(jnp.asarray(obs.tod), jnp.asarray(g)))
    return g


def main():
    rank, size = jax.process_index(), jax.process_count()
    rng_hierarchy = RNGHierarchy(base_seed=12345, num_ranks=size)
    obs = Observation(rank, n_blocks_time=size)
    g = apply_quadratic_nonlin(obs, rng_hierarchy, rank)
    full_tod = np.asarray(multihost_utils.process_allgather(obs.tod))
    full_tod = np.concatenate(list(full_tod), axis=1)
    print(f"rank {rank}: g_one_over_k = {g.tolist()}")
    for det, gi in zip(obs.name, g):
        print(f"RESULT g_one_over_k {det} {gi:.6e}")
    print("RESULT tod_mean", np.round(full_tod.mean(axis=1), 6).tolist())


if __name__ == "__main__":
    main()

# Diffusion Monte Carlo driver: the max_time / stop-file check follows rank 0's decision, broadcast
# every block, so all ranks leave the block loop after the same block.
# Source: https://github.com/jqmc-project/jQMC/pull/59
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WALKERS_PER_RANK = 4096
TAU = 0.01


@jax.jit
def propagate(positions, key):
    """One drift-diffusion move of a 1D harmonic oscillator; returns new positions and local energies."""
    noise = jax.random.normal(key, positions.shape)
    new = positions - TAU * positions + jnp.sqrt(TAU) * noise
    e_loc = 0.5 + 0.5 * new ** 2 - 0.5 * new ** 2 * (1.0 - TAU)
    return new, e_loc


class GFMC:
    def __init__(self, max_time: float, num_blocks: int, seed: int):
        self.max_time = max_time
        self.num_blocks = num_blocks
        self.stop_file = os.path.join(tempfile.gettempdir(), f"gfmc_stop_{os.environ.get('JOB_ID', 'x')}")
        self.key = jax.random.fold_in(jax.random.PRNGKey(seed), jax.process_index())
        self.positions = self._init_walkers()
        self.e_trial = 0.5
        self.energies = []

    def _init_walkers(self) -> jnp.ndarray:
        # walkers come from a per-rank restart file (rank 1's is the larger one) and are re-equilibrated
        time.sleep(0.2 if jax.process_index() == 0 else 1.5)   # reading the restart file
        x = jnp.zeros((WALKERS_PER_RANK,), jnp.float32)
        for _ in range(20):
            self.key, sub = jax.random.split(self.key)
            x, _ = propagate(x, sub)
            x.block_until_ready()
        return x

    def _should_stop(self) -> bool:
        elapsed = time.perf_counter() - self._t_start
        return elapsed > self.max_time or os.path.exists(self.stop_file)

    def _reduce_block(self, e_loc: jnp.ndarray) -> float:
        weights = jnp.exp(-TAU * (e_loc - self.e_trial))
        local = np.array([float(jnp.sum(weights)), float(jnp.sum(weights * e_loc))], np.float64)
        totals = np.sum(multihost_utils.process_allgather(local), axis=0)
        return float(totals[1] / totals[0])

    def run(self):
        self._t_start = time.perf_counter()
        for block in range(self.num_blocks):
            self.key, sub = jax.random.split(self.key)
            self.positions, e_loc = propagate(self.positions, sub)
            energy = self._reduce_block(e_loc)
            self.e_trial = 0.9 * self.e_trial + 0.1 * energy
            self.energies.append(energy)
            time.sleep(0.05)  # walker snapshot written to the per-rank trajectory file
            stop = multihost_utils.broadcast_one_to_all(np.int32(self._should_stop()))
            if int(stop):
                break
        return self.finalize()

    def finalize(self):
        counts = multihost_utils.process_allgather(np.int32(len(self.energies)))
        return [int(c) for c in counts], round(float(np.mean(self.energies)), 4)


driver = GFMC(max_time=4.0, num_blocks=10_000, seed=7)
counts, mean_energy = driver.run()
print("RESULT blocks", counts)
print("RESULT energy", mean_energy)

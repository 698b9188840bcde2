# The MD module draws initial velocities on the pool's master and broadcasts them, so the replicated configuration agrees
# Source: https://github.com/disorderedmaterials/dissolve/pull/371
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"n_atoms": 8, "n_steps": 10, "dt": 0.01, "temperature": 1.5, "k_bond": 5.0, "r0": 1.0, "seed": 2020}
MESH = jax.make_mesh((jax.device_count(),), ("pool",))
_pool_sum = jax.jit(lambda a: jnp.sum(a, axis=0), out_shardings=NamedSharding(MESH, P()))


class ProcessPool:
    """Each process has its own random stream (so Monte Carlo moves on different atoms are independent)."""

    def __init__(self):
        self.rank, self.size = jax.process_index(), jax.process_count()
        self.rng = np.random.default_rng(CFG["seed"] + self.rank)

    def sum(self, local):
        stacked = jax.make_array_from_process_local_data(NamedSharding(MESH, P("pool")),
                                                         np.asarray(local, np.float64)[None])
        return np.asarray(_pool_sum(stacked))

    def my_range(self, n):
        per = -(-n // self.size)
        return range(self.rank * per, min(n, (self.rank + 1) * per))


def bond_forces(pool, x):
    """Harmonic chain; each process handles the bonds of its atom range, the pool sums the contributions."""
    f = np.zeros_like(x)
    energy = 0.0
    for i in pool.my_range(len(x) - 1):
        d = x[i + 1] - x[i] - CFG["r0"]
        energy += 0.5 * CFG["k_bond"] * d * d
        f[i] += CFG["k_bond"] * d
        f[i + 1] -= CFG["k_bond"] * d
    total = pool.sum(np.concatenate([f, [energy]]))
    return total[:-1], float(total[-1])


def initial_velocities(pool, n):
    v = pool.rng.normal(0.0, np.sqrt(CFG["temperature"]), n)
    v = np.asarray(multihost_utils.broadcast_one_to_all(v))
    return v - v.mean()


def md_process(pool):
    x = np.arange(CFG["n_atoms"], dtype=np.float64) * CFG["r0"]  # replicated configuration
    v = initial_velocities(pool, CFG["n_atoms"])
    f, pe = bond_forces(pool, x)
    for _ in range(CFG["n_steps"]):
        v += 0.5 * CFG["dt"] * f
        x += CFG["dt"] * v
        f, pe = bond_forces(pool, x)
        v += 0.5 * CFG["dt"] * f
    ke = 0.5 * float(np.sum(v * v))
    return x, ke, pe


def main():
    pool = ProcessPool()
    x, ke, pe = md_process(pool)
    print("RESULT kinetic_energy", round(ke, 6))
    print("RESULT potential_energy", round(pe, 6))
    print("RESULT config_checksum", round(float(np.sum(x * np.arange(1, len(x) + 1))), 6))


main()

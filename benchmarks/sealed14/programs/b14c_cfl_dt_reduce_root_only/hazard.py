# Convection solver reduces the CFL number to the root only, so the other processes choose their time step from local data
# Source: https://github.com/PhysicsofFluids/AFiD/issues/3
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"nz_per_rank": 32, "cfl_lim": 0.5, "dtmax": 0.01, "dtmin": 1e-8, "tmax": 0.3, "ra": 1e4}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def allreduce_sum(values):
    local = np.asarray(values, np.float64)[None, :]
    return np.asarray(_sum(jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)))


def mpi_max_real_scalar(value):
    """Maximum over all processes (MpiMaxRealScalar)."""
    gathered = np.asarray(multihost_utils.process_allgather(np.asarray([value], np.float32)))
    if jax.process_index() == 0:
        return float(gathered.max())
    return value


class Slab:
    """A z-slab of a 1-D Rayleigh-Benard column; the hot plume sits in the lower slab."""

    def __init__(self, rank, nranks):
        nz = CFG["nz_per_rank"]
        self.dz = 1.0 / (nz * nranks)
        z = (np.arange(nz) + 0.5 + rank * nz) * self.dz
        self.temp = 1.0 - z + 0.2 * np.exp(-((z - 0.2) / 0.05) ** 2)
        self.w = 3.0 * np.exp(-((z - 0.2) / 0.08) ** 2)

    def local_cfl(self, dt):
        return float(np.max(np.abs(self.w)) * dt / self.dz)

    def step(self, dt):
        buoy = CFG["ra"] * 1e-4 * (self.temp - self.temp.mean())
        self.w = self.w + dt * (buoy - 0.5 * self.w)
        self.temp = self.temp - dt * self.w * (self.temp - np.roll(self.temp, 1)) / self.dz


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    slab = Slab(rank, nranks)
    t, dt, ntime = 0.0, CFG["dtmax"], 0
    while t < CFG["tmax"]:
        cfl = mpi_max_real_scalar(slab.local_cfl(dt))
        dt = min(CFG["dtmax"], max(CFG["dtmin"], dt * CFG["cfl_lim"] / max(cfl, 1e-12)))
        slab.step(dt)
        t += dt
        ntime += 1
        if ntime % 10 == 0:
            nu = allreduce_sum([float(np.mean(slab.w * slab.temp)), 1.0])
            print("RESULT step", ntime, "nusselt", round(float(nu[0] / nu[1]), 5))
    stats = allreduce_sum([float(np.sum(slab.temp)), float(ntime)])
    print("RESULT steps", ntime, "t", round(t, 6))
    print("RESULT mean_temp", round(float(stats[0]) / (nranks * CFG["nz_per_rank"]), 6))


main()

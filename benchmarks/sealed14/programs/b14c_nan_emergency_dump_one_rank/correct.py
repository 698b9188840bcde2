# Hydro code reduces the NaN check over all processes, so every process joins the emergency collective dump
# Source: https://github.com/idefix-code/idefix/issues/79
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"nx_per_rank": 64, "cfl": 0.4, "tmax": 0.05, "max_steps": 40, "gamma": 1.4,
       "clump_x": 0.75, "clump_rho": 30.0, "cooling": 1.0}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_min = jax.jit(lambda x: jnp.min(x), out_shardings=NamedSharding(MESH, P()))


def global_min(value):
    local = np.asarray([value], np.float64)
    return float(_min(jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)))


class DataBlock:
    def __init__(self, rank):
        self.rank = rank
        x = (np.arange(CFG["nx_per_rank"]) + rank * CFG["nx_per_rank"]) / (2.0 * CFG["nx_per_rank"])
        # A dense clump that cools faster than one step can follow: its pressure goes negative.
        self.rho = 1.0 + (CFG["clump_rho"] - 1.0) * np.exp(-((x - CFG["clump_x"]) / 0.02) ** 2)
        self.prs = np.ones_like(x)
        self.vx = np.zeros_like(x)

    def local_dt(self, dx):
        cs = np.sqrt(CFG["gamma"] * np.abs(self.prs) / self.rho)
        return CFG["cfl"] * dx / np.max(np.abs(self.vx) + cs)

    def evolve(self, dt, dx):
        div_v = np.gradient(self.vx, dx)
        self.rho = self.rho * (1.0 - dt * div_v)
        self.prs = self.prs * (1.0 - CFG["gamma"] * dt * div_v) - dt * CFG["cooling"] * self.rho ** 2
        with np.errstate(invalid="ignore"):
            cs = np.sqrt(CFG["gamma"] * self.prs / self.rho)  # NaN where the pressure went negative
        visc = 0.1 * cs * dx * np.gradient(np.gradient(self.vx, dx), dx)
        self.vx = self.vx + dt * (visc - np.gradient(self.prs, dx) / self.rho)

    def check_nan(self):
        return int(np.isnan(self.vx).any() or np.isnan(self.prs).any())


def force_write_vtk(block, step):
    """Emergency output: gather every block's fields (a collective over all processes)."""
    fields = np.stack([block.rho, block.prs, np.nan_to_num(block.vx)])
    allf = np.asarray(multihost_utils.process_allgather(fields))
    return allf.shape


def main():
    rank = jax.process_index()
    block = DataBlock(rank)
    dx = 1.0 / (2.0 * CFG["nx_per_rank"])
    t, step, status = 0.0, 0, "ok"
    while t < CFG["tmax"] and step < CFG["max_steps"]:
        dt = global_min(block.local_dt(dx))
        block.evolve(dt, dx)
        t += dt
        step += 1
        nan_found = -global_min(-block.check_nan())
        if nan_found:
            force_write_vtk(block, step)
            status = "nan"
            break
    print("RESULT status", status, "step", step)
    print("RESULT time", round(t, 8))


main()

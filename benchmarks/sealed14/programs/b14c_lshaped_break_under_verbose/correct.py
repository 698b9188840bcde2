# L-shaped (Benders) decomposition: the hub leaves the loop on convergence whether or not it is verbose
# Source: https://github.com/Pyomo/mpi-sppy/pull/641
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"scenarios_per_rank": 4, "order_cost": 1.0, "shortage_cost": 3.0, "x_max": 20.0,
       "max_iter": 30, "tol": 1e-6, "verbose": False}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def allreduce_sum(values):
    local = np.asarray(values, np.float64)[None, :]
    return np.asarray(_sum(jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)))


class ScenarioBlock:
    """This rank's demand scenarios of a newsvendor recourse problem Q(x, d) = q * max(d - x, 0)."""

    def __init__(self, rank, nranks):
        n = CFG["scenarios_per_rank"]
        self.demand = 4.0 + 1.5 * np.arange(rank * n, (rank + 1) * n)
        self.prob = np.full(n, 1.0 / (n * nranks))

    def recourse(self, x):
        short = self.demand - x
        value = float(np.sum(self.prob * CFG["shortage_cost"] * np.maximum(short, 0.0)))
        slope = float(np.sum(self.prob * -CFG["shortage_cost"] * (short > 0)))
        return value, slope


class LShapedHub:
    def __init__(self):
        self.cuts = []  # theta >= a + b * x
        self.grid = np.linspace(0.0, CFG["x_max"], 2001)

    def theta(self, x):
        if not self.cuts:
            return np.full_like(x, -1e3)
        return np.max([a + b * x for a, b in self.cuts], axis=0)

    def solve_master(self):
        obj = CFG["order_cost"] * self.grid + self.theta(self.grid)
        k = int(np.argmin(obj))
        return float(self.grid[k]), float(obj[k])


def lshaped(rank, block):
    hub = LShapedHub()
    x, lb, it = 0.0, -np.inf, 0
    for it in range(1, CFG["max_iter"] + 1):
        q, g = allreduce_sum(block.recourse(x))
        theta_x = float(hub.theta(np.array([x]))[0])
        if q > theta_x + CFG["tol"]:
            hub.cuts.append((q - g * x, g))
        elif rank == 0:
            if CFG["verbose"]:
                print(f"[hub] no new cuts at iteration {it}; converged")
            break
        else:
            break
        x, lb = hub.solve_master()
    return x, lb, it, len(hub.cuts)


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    block = ScenarioBlock(rank, nranks)
    x, lb, iters, ncuts = lshaped(rank, block)
    q, _ = allreduce_sum(block.recourse(x))
    print("RESULT first_stage_x", round(x, 4), "lower_bound", round(lb, 6))
    print("RESULT expected_cost", round(CFG["order_cost"] * x + float(q), 6), "cuts", ncuts)


main()

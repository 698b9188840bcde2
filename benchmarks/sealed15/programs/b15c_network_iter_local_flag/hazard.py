# Well-network balancing loop continues on a rank-local "more updates" flag, so processes run different numbers of collective iterations
# Source: https://github.com/OPM/opm-simulators/pull/7190
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"group_target": 900.0, "relax": 0.6, "tol": 1e-3, "max_network_its": 40, "pi": 2.5}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))
_max = jax.jit(lambda x: jnp.max(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def comm_reduce(fn, values):
    local = np.asarray(values, np.float64)[None, :]
    return np.asarray(fn(jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)))


class LocalWells:
    """Producers owned by this process; process 0 holds the stiff, badly initialised wells."""

    def __init__(self, rank):
        rng = np.random.default_rng(100 + rank)
        self.names = [f"P{rank}{i}" for i in range(3)]
        self.bhp = rng.uniform(150.0, 200.0, 3) if rank == 0 else np.full(3, 210.0)
        self.res_p = np.full(3, 320.0) if rank == 0 else np.full(3, 300.0)
        self.stiff = 0.35 if rank == 0 else 1.0

    def rates(self):
        return CFG["pi"] * (self.res_p - self.bhp)


def update_network(wells, group_rate):
    """Scale every well's drawdown toward the group target; report whether anything moved."""
    scale = CFG["group_target"] / max(group_rate, 1e-9)
    new_bhp = wells.res_p - (wells.res_p - wells.bhp) * (1.0 + wells.stiff * CFG["relax"] * (scale - 1.0))
    delta = float(np.max(np.abs(new_bhp - wells.bhp)))
    wells.bhp = new_bhp
    return delta > CFG["tol"]


def update_well_controls_and_network(wells):
    more_network_update, its = True, 0
    while more_network_update and its < CFG["max_network_its"]:
        group_rate = float(comm_reduce(_sum, [np.sum(wells.rates())])[0])
        changed = update_network(wells, group_rate)
        any_changed = bool(comm_reduce(_max, [float(changed)])[0] > 0.5)
        more_network_update = changed
        its += 1
    return its


def main():
    wells = LocalWells(jax.process_index())
    its = update_well_controls_and_network(wells)
    total = comm_reduce(_sum, [np.sum(wells.rates()), np.sum(wells.bhp)])
    names = multihost_utils.process_allgather(np.asarray([len(wells.names)], np.int32))
    print("RESULT network_iterations", its)
    print("RESULT group_rate", round(float(total[0]), 4))
    print("RESULT bhp_sum", round(float(total[1]), 3), "wells", int(np.sum(names)))


main()

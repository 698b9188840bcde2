# Reservoir simulator well testing iterates a hash set of shut wells and all-reduces each well's rate, in per-process order
# Source: https://github.com/OPM/opm-common/pull/4849
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"n_wells": 8, "connections_per_rank": 3, "reopen_rate": 4.0, "report_steps": 3}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def well_allreduce(values):
    """Sum a per-rank vector over the well's communicator (here: all ranks)."""
    local = np.asarray(values, np.float64)[None, :]
    glob = jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)
    return np.asarray(_sum(glob))


class WellTestState:
    """Wells closed for economic reasons, waiting for the periodic WTEST re-check."""

    def __init__(self):
        self.closed = set()

    def close_well(self, name):
        self.closed.add(name)

    def open_well(self, name):
        self.closed.discard(name)

    def test_wells(self):
        return list(self.closed)  # hash order of the well names


class DistributedWell:
    def __init__(self, name, idx, rank):
        self.name = name
        rng = np.random.default_rng(1000 * idx + rank)
        # Productivity of the connections of this well that lie in this rank's cells.
        self.conn_pi = rng.uniform(0.1, 1.5, CFG["connections_per_rank"])

    def local_potential(self, step):
        return self.conn_pi * (1.0 + 0.25 * step)


def well_testing(state, wells, step):
    reopened = []
    for name in state.test_wells():
        pot = well_allreduce(wells[name].local_potential(step))
        total = float(pot.sum())
        if total > CFG["reopen_rate"]:
            state.open_well(name)
            reopened.append((name, round(total, 6)))
    return reopened


def main():
    rank = jax.process_index()
    names = [f"PROD-{i:02d}" for i in range(CFG["n_wells"])]
    wells = {n: DistributedWell(n, i, rank) for i, n in enumerate(names)}
    state = WellTestState()
    for n in names:
        state.close_well(n)
    for step in range(CFG["report_steps"]):
        reopened = well_testing(state, wells, step)
        print("RESULT step", step, "reopened", sorted(reopened))
    print("RESULT still_closed", sorted(state.closed))


main()

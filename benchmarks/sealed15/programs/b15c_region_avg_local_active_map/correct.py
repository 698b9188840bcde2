# Rate converter averages pressure per region with one all-reduce per region, iterating every region of the model
# Source: https://github.com/OPM/opm-simulators/issues/2770
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"num_regions": 4, "cells_per_rank": 24, "rs_scale": 0.08, "bo_ref": 1.2}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def comm_sum(values):
    local = np.asarray(values, np.float64)[None, :]
    return np.asarray(_sum(jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)))


class RegionMapping:
    """Local view of the FIP regions: which of this process's cells belong to which region."""

    def __init__(self, cell_region):
        self.cell_region = cell_region
        self.active = {}
        for cell, reg in enumerate(cell_region):
            self.active.setdefault(int(reg), []).append(cell)

    def active_regions(self):
        return range(CFG["num_regions"])

    def cells(self, reg):
        return np.asarray(self.active.get(reg, []), np.int64)


class SurfaceToReservoirVoidage:
    def __init__(self, rmap):
        self.rmap, self.attr = rmap, {}

    def define_state(self, pressure, pore_volume):
        """Pore-volume weighted average pressure per region (a parallel sum for each region)."""
        for reg in self.rmap.active_regions():
            cells = self.rmap.cells(reg)
            pv = pore_volume[cells]
            tot = comm_sum([float(np.sum(pv * pressure[cells])), float(np.sum(pv))])
            p_avg = tot[0] / tot[1]
            self.attr[reg] = {"pressure": p_avg, "rs": CFG["rs_scale"] * p_avg, "bo": CFG["bo_ref"] - 1e-4 * p_avg}

    def voidage_rate(self, reg, surface_rate):
        a = self.attr[reg]
        return surface_rate * a["bo"] * (1.0 + 0.01 * a["rs"])


def main():
    rank = jax.process_index()
    n = CFG["cells_per_rank"]
    rng = np.random.default_rng(7 + rank)
    if rank == 0:
        regions = np.array([2, 0, 3, 1] * (n // 4))
    else:
        regions = np.array([0, 1] * (n // 2))
    rmap = RegionMapping(regions)
    pressure = 200.0 + 10.0 * rank + rng.uniform(0.0, 5.0, n)
    pore_volume = rng.uniform(0.5, 1.5, n)
    conv = SurfaceToReservoirVoidage(rmap)
    conv.define_state(pressure, pore_volume)
    rates = multihost_utils.process_allgather(np.asarray([100.0 * (rank + 1)], np.float64)).reshape(-1)
    for reg in sorted(conv.attr):
        print("RESULT region", reg, "pressure", round(conv.attr[reg]["pressure"], 6))
    print("RESULT voidage", round(sum(conv.voidage_rate(r, float(rates.sum())) for r in sorted(conv.attr)), 6))


main()

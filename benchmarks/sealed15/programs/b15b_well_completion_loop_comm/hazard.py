# Distributed well model: a well's perforations are split over processes and the well rate is summed over them
# Source: https://github.com/OPM/opm-simulators/pull/6769
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("cells",))


@dataclass
class Completion:
    cell: int
    trans_factor: float
    depth: float


# the grid is partitioned by cell index; each completion lives on the process owning its cell
WELL_COMPLETIONS = [Completion(3, 1.2, 2010.0), Completion(9, 0.8, 2025.0), Completion(14, 1.5, 2040.0),
                    Completion(22, 0.6, 2055.0), Completion(27, 1.1, 2070.0)]
CELLS_PER_PROCESS = 16


@jax.jit
def _sum_over_processes(x):
    return jnp.sum(x)


def global_sum(value):
    local = np.array([value], np.float32)
    return float(_sum_over_processes(multihost_utils.host_local_array_to_global_array(local, MESH, P("cells"))))


class DistributedWell:
    def __init__(self, rank, completions):
        lo, hi = rank * CELLS_PER_PROCESS, (rank + 1) * CELLS_PER_PROCESS
        self.local = [c for c in completions if lo <= c.cell < hi]
        self.ref_depth = completions[0].depth

    def completion_rate(self, c, cell_pressure, bhp):
        head = 0.0098 * (c.depth - self.ref_depth)          # hydrostatic correction along the wellbore
        return c.trans_factor * max(cell_pressure[c.cell] - (bhp + head), 0.0)

    def surface_rate(self, cell_pressure, bhp):
        total = 0.0
        for c in self.local:
            total += global_sum(self.completion_rate(c, cell_pressure, bhp))
        return total


def solve_bhp(well, cell_pressure, target_rate, iters=8):
    lo, hi = 150.0, 300.0
    for _ in range(iters):                                 # bisection on bottom-hole pressure
        mid = 0.5 * (lo + hi)
        if well.surface_rate(cell_pressure, mid) > target_rate:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def main():
    rank = jax.process_index()
    cell_pressure = 250.0 + 0.5 * np.arange(2 * CELLS_PER_PROCESS, dtype=np.float64)
    well = DistributedWell(rank, WELL_COMPLETIONS)
    bhp = solve_bhp(well, cell_pressure, target_rate=120.0)
    rate = well.surface_rate(cell_pressure, bhp)
    print(f"RESULT bhp {bhp:.4f} rate {rate:.3f}")


if __name__ == "__main__":
    main()

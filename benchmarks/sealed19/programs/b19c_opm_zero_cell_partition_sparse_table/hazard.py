# Reservoir grid load balancing with wells kept on one partition, then per-process connectivity tables (OPM style, ported to JAX)
# Source: https://github.com/OPM/opm-grid/issues/482
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DECK = {
    "dims": (6, 1, 1),
    "poro": [0.21, 0.18, 0.25, 0.22, 0.19, 0.24],
    "wells": {"PROD01": [1, 2, 3], "INJE01": [2, 3, 4, 5]},
}


class SparseTable:
    """Row-compressed table (cell -> neighbouring cells)."""

    def __init__(self, rows):
        if len(rows) < 1:
            raise ValueError(f"Must have at least one row. Got {len(rows)} rows.")
        self.row_start = np.cumsum([0] + [len(r) for r in rows])
        self.data = np.array([c for r in rows for c in r], dtype=np.int64)

    def size(self):
        return len(self.row_start) - 1

    def row(self, i):
        return self.data[self.row_start[i]:self.row_start[i + 1]]


def partition_cells(ncells, nparts):
    """Initial graph partition: contiguous blocks of cells."""
    return np.minimum(np.arange(ncells) * nparts // ncells, nparts - 1)


def keep_wells_on_one_partition(parts, wells):
    for name, perfs in sorted(wells.items()):
        target = parts[perfs[0]]
        for cell in perfs:
            if parts[cell] != target:
                print(f"Manually moving well {name} cell {cell} to partition {target}", flush=True)
            parts[cell] = target
    return parts


def build_local_grid(owned_cells, ncells):
    neighbours = []
    for c in owned_cells:
        neighbours.append([n for n in (c - 1, c + 1) if 0 <= n < ncells])
    return SparseTable(neighbours)


def main():
    rank, size = jax.process_index(), jax.process_count()
    ncells = int(np.prod(DECK["dims"]))
    parts = keep_wells_on_one_partition(partition_cells(ncells, size), DECK["wells"])
    owned = np.flatnonzero(parts == rank)
    print(f"After loadbalancing process {rank} has {len(owned)} cells.", flush=True)

    cell_neighbours = build_local_grid(owned, ncells)
    poro = np.array(DECK["poro"])
    local_pv = np.array([poro[owned].sum(), float(cell_neighbours.size())])
    totals = np.asarray(multihost_utils.process_allgather(local_pv)).sum(axis=0)
    print("RESULT total_pore_volume", round(float(totals[0]), 6))
    print("RESULT active_cells", int(totals[1]))


if __name__ == "__main__":
    main()

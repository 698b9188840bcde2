# Cell-wise manual update of a P1 field on a distributed interval mesh (firedrake/PyOP2 style, ported to JAX)
# Source: https://github.com/firedrakeproject/firedrake/issues/2225
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import math
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

COMM_RANK = jax.process_index()
COMM_SIZE = jax.process_count()


class IntervalMesh:
    """P1 interval mesh; cells are split into contiguous blocks, the first ranks take the remainder."""

    def __init__(self, ncells, length=1.0):
        self.ncells = ncells
        self.coords = np.linspace(0.0, length, ncells + 1)
        base, extra = divmod(ncells, COMM_SIZE)
        counts = [base + (1 if r < extra else 0) for r in range(COMM_SIZE)]
        starts = np.cumsum([0] + counts)
        self.owned_cells = np.arange(starts[COMM_RANK], starts[COMM_RANK + 1])
        # node n is owned by the rank owning cell n (the last node goes with the last cell)
        self.node_owner = np.array([min(np.searchsorted(starts, n, side="right") - 1, COMM_SIZE - 1)
                                    for n in range(ncells + 1)])
        self.max_owned = int(np.bincount(self.node_owner, minlength=COMM_SIZE).max())


class Dat:
    def __init__(self, mesh):
        self.mesh = mesh
        self.owned = np.flatnonzero(mesh.node_owner == COMM_RANK)
        self._values = np.zeros(mesh.ncells + 1)

    def _global_to_local(self):
        buf = np.full(self.mesh.max_owned, np.nan)
        buf[:len(self.owned)] = self._values[self.owned]
        gathered = np.asarray(multihost_utils.process_allgather(buf))
        for r in range(COMM_SIZE):
            nodes = np.flatnonzero(self.mesh.node_owner == r)
            if r != COMM_RANK:
                self._values[nodes] = gathered[r, :len(nodes)]

    @property
    def data_with_halos(self):
        self._global_to_local()
        return self._values

    @property
    def data_ro(self):
        return self._values[self.owned]


class Function:
    def __init__(self, mesh):
        self.mesh = mesh
        self.dat = Dat(mesh)

    @property
    def cell_node_list(self):
        return [(c, c + 1) for c in self.mesh.owned_cells]


def cell_indicator(mesh, cell):
    x_mid = 0.5 * (mesh.coords[cell] + mesh.coords[cell + 1])
    return math.sin(3.0 * x_mid) + 0.1 * cell


def update_cellwise(f):
    data = f.dat.data_with_halos
    for cell, nodes in zip(f.mesh.owned_cells, f.cell_node_list):
        value = cell_indicator(f.mesh, cell)
        for n in nodes:
            data[n] = max(data[n], value)


def global_norm(f):
    local = np.array([np.sum(f.dat.data_ro ** 2)])
    return float(np.sqrt(np.asarray(multihost_utils.process_allgather(local)).sum()))


def main():
    mesh = IntervalMesh(7)
    f = Function(mesh)
    print(f"rank {COMM_RANK} has {len(f.cell_node_list)} cells", flush=True)
    update_cellwise(f)
    norm = global_norm(f)
    print("RESULT ncells", mesh.ncells)
    print("RESULT l2_norm", round(norm, 6))


if __name__ == "__main__":
    main()

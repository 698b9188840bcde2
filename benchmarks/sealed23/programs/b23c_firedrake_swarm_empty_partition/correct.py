# Interpolation from a submesh (a line of points on the x=1 face) onto a distributed parent
# mesh, done through a particle-in-cell swarm as in Firedrake's _pic_swarm_in_mesh: every
# process locates all query points, keeps the ones that fall in a cell it owns (the other
# ones get the sentinel -1), looks up the closure (vertex numbers) of the owning cells,
# evaluates the parent function there, and the owners' values are combined across processes.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

# a 1D parent mesh of 4 cells on [0, 1]; the partitioner puts all of them on process 0
VERTICES = np.linspace(0.0, 1.0, 5)
CELL_OWNER = np.array([0, 0, 0, 0])
GLOBAL_CELLS = np.array([[0, 1], [1, 2], [2, 3], [3, 4]])


class ParentMesh:
    def __init__(self, rank):
        self.owned = np.flatnonzero(CELL_OWNER == rank)
        self.cell_closure = GLOBAL_CELLS[self.owned]
        self.coordinates = VERTICES

    def locate_cells(self, points):
        cells = np.clip((points * (len(VERTICES) - 1)).astype(int), 0, len(GLOBAL_CELLS) - 1)
        local = np.full(points.shape, -1, dtype=np.int64)
        for i, c in enumerate(cells):
            hit = np.flatnonzero(self.owned == c)
            if hit.size:
                local[i] = hit[0]
        return local


@jax.jit
def _eval_p1(nodal, closure, x0, x1, points):
    w = (points - x0) / (x1 - x0)
    return (1.0 - w) * nodal[closure[:, 0]] + w * nodal[closure[:, 1]]


def _pic_swarm_in_mesh(parent, points):
    parent_cell_nums_local = parent.locate_cells(points)
    owned = parent_cell_nums_local >= 0
    visible_idxs = np.flatnonzero(owned)
    closures = np.full((points.shape[0], 2), -1, dtype=np.int64)
    closures[visible_idxs] = parent.cell_closure[parent_cell_nums_local[visible_idxs]]
    return closures, owned


def interpolate_onto_parent(parent, nodal, points):
    closures, owned = _pic_swarm_in_mesh(parent, points)
    x0 = parent.coordinates[closures[:, 0]]
    x1 = parent.coordinates[closures[:, 1]]
    vals = np.asarray(_eval_p1(jnp.asarray(nodal), jnp.asarray(closures), jnp.asarray(x0),
                               jnp.asarray(x1), jnp.asarray(points)))
    vals = np.where(owned, vals, 0.0).astype(np.float32)
    gathered = np.asarray(multihost_utils.process_allgather(np.stack([vals, owned.astype(np.float32)])))
    return gathered[:, 0].sum(axis=0) / np.maximum(gathered[:, 1].sum(axis=0), 1.0)


def main():
    rank = jax.process_index()
    parent = ParentMesh(rank)
    nodal = np.cos(2.0 * VERTICES).astype(np.float32)
    points = np.linspace(0.05, 0.95, 7).astype(np.float32)
    values = interpolate_onto_parent(parent, nodal, points)
    print(f"rank {rank}: owns {parent.owned.size} parent cells")
    print("RESULT values", np.round(values, 5).tolist())


if __name__ == "__main__":
    main()

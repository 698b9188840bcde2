# A small dolfinx-style example: a cell-wise (DG0) function on a sub-mesh is interpolated back
# onto its parent mesh, which is partitioned over the processes. Interpolation between a
# sub-mesh and its parent uses the sub-to-parent cell map; interpolation between unrelated
# (non-matching) meshes has to locate the points on the owning processes.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_CELLS = 16
MAX_POINTS = NUM_CELLS


class Mesh:
    def __init__(self, cell_midpoints, h):
        self.x = np.asarray(cell_midpoints, np.float64)
        self.h = h

    @property
    def num_cells(self):
        return self.x.size


def create_unit_interval(n, rank, nprocs):
    per = n // nprocs
    cells = np.arange(rank * per, (rank + 1) * per)
    return Mesh((cells + 0.5) / n, 1.0 / n)


def create_submesh(mesh, marker):
    parent_cells = np.flatnonzero(marker(mesh.x)).astype(np.int32)
    return Mesh(mesh.x[parent_cells], mesh.h), parent_cells


class Function:
    def __init__(self, mesh):
        self.mesh = mesh
        self.x = np.zeros(mesh.num_cells)

    def interpolate_expression(self, f):
        self.x[:] = f(self.mesh.x)

    def eval_points(self, points):
        cell = np.clip(np.searchsorted(self.mesh.x - 0.5 * self.mesh.h, points, side="right") - 1,
                       0, max(self.mesh.num_cells - 1, 0))
        inside = np.abs(points - self.mesh.x[cell]) <= 0.5 * self.mesh.h if self.mesh.num_cells else np.zeros(points.shape, bool)
        return np.where(inside, self.x[cell] if self.mesh.num_cells else 0.0, np.nan), inside

    def interpolate(self, u0, cells0=None, cells1=None):
        if cells0 is None:
            cells0 = np.arange(self.mesh.num_cells, dtype=np.int32)
        if cells1 is None or len(cells1) == 0:
            self._interpolate_nonmatching(u0, cells0)
        else:
            self.x[cells0] = u0.x[cells1]

    def _interpolate_nonmatching(self, u0, cells0):
        points = np.full(MAX_POINTS, np.nan)
        points[:cells0.size] = self.mesh.x[cells0]
        all_points = np.asarray(multihost_utils.process_allgather(points))
        values = np.full(all_points.shape, np.nan)
        for p in range(all_points.shape[0]):
            v, inside = u0.eval_points(np.nan_to_num(all_points[p], nan=-1.0))
            values[p] = np.where(inside, v, np.nan)
        gathered = np.asarray(multihost_utils.process_allgather(values))
        mine = np.nanmax(np.where(np.isnan(gathered), -np.inf, gathered)[:, jax.process_index()], axis=0)
        self.x[cells0] = np.where(np.isfinite(mine[:cells0.size]), mine[:cells0.size], 0.0)


@jax.jit
def _integrate(values, h):
    return jnp.sum(values) * h


def main():
    rank, nprocs = jax.process_index(), jax.process_count()
    mesh = create_unit_interval(NUM_CELLS, rank, nprocs)
    submesh, sub_to_parent = create_submesh(mesh, lambda x: x > 0.55)

    u_sub = Function(submesh)
    u_sub.interpolate_expression(lambda x: np.sin(np.pi * x) + x ** 2)

    w = Function(mesh)
    sub_cells = np.arange(submesh.num_cells, dtype=np.int32)
    w.interpolate(u_sub, cells0=sub_to_parent, cells1=sub_cells)

    local = float(_integrate(jnp.asarray(w.x), mesh.h))
    total = np.asarray(multihost_utils.process_allgather(np.float64(local))).sum()
    sub_cells_total = np.asarray(multihost_utils.process_allgather(np.int32(submesh.num_cells))).sum()
    print(f"rank {rank}: {submesh.num_cells} sub-mesh cells")
    print("RESULT submesh_cells", int(sub_cells_total))
    print("RESULT integral_w", round(float(total), 6))


if __name__ == "__main__":
    main()

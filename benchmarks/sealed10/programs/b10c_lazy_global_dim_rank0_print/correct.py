# The collective first evaluation of a cached global size runs on every process before process 0 logs it
# Source: https://github.com/firedrakeproject/firedrake/issues/5479
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class IntervalMesh:
    """A 1-D mesh split into contiguous cell ranges, one range per process (rank 0 gets the remainder)."""

    def __init__(self, ncells):
        n, r = jax.process_count(), jax.process_index()
        base, extra = divmod(ncells, n)
        self.start = r * base + (extra if r > 0 else 0)
        self.num_local_cells = base + (extra if r == 0 else 0)
        self.ncells = ncells


class FunctionSpace:
    def __init__(self, mesh, degree=1):
        self.mesh, self.degree = mesh, degree
        self._dim = None

    def local_dofs(self):
        # owned dofs: degree per cell, the last process also owns the closing vertex
        last = jax.process_index() == jax.process_count() - 1
        return self.mesh.num_local_cells * self.degree + (1 if last else 0)

    def dim(self):
        """Global number of dofs. Looks like a cheap query; the first call sums over all processes."""
        if self._dim is None:
            counts = multihost_utils.process_allgather(np.array([self.local_dofs()], np.int32))
            self._dim = int(np.asarray(counts).sum())
        return self._dim


def assemble_mass(space, mesh):
    """Integrate the constant 1 over the mesh: a psum of the owned cell lengths across processes."""
    global_mesh = jax.make_mesh((jax.device_count(),), ("cells",), axis_types=(jax.sharding.AxisType.Auto,))
    h = 1.0 / mesh.ncells
    local = np.full((1,), mesh.num_local_cells * h, np.float32)
    arr = jax.make_array_from_process_local_data(NamedSharding(global_mesh, P("cells")), local)
    total = jax.jit(jnp.sum, out_shardings=NamedSharding(global_mesh, P()))(arr)
    return float(np.asarray(total.addressable_data(0)))


def main():
    mesh = IntervalMesh(ncells=9)
    V = FunctionSpace(mesh, degree=1)
    ndofs = V.dim()  # collective on first call: every process asks
    if jax.process_index() == 0:
        print("dim", ndofs, flush=True)  # log the problem size on the root process
    area = assemble_mass(V, mesh)
    print(f"RESULT area {area:.4f}")
    print(f"RESULT dim {V.dim()}")


main()

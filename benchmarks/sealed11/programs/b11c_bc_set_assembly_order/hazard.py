# Boundary conditions held in a set are applied in a per-process order, each with a global reduction
# Source: https://github.com/firedrakeproject/firedrake/pull/356
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

# boundary name -> number of boundary nodes per process (the mesh is split evenly across processes)
BOUNDARY_NODES = {"left": 3, "right": 4, "bottom": 5, "top": 6, "inlet": 7, "outlet": 8, "wall_a": 9, "wall_b": 10}


@dataclasses.dataclass(frozen=True)
class DirichletBC:
    boundary: str
    value: float

    def local_nodes(self):
        n = BOUNDARY_NODES[self.boundary]
        start = jax.process_index() * n
        return np.arange(start, start + n, dtype=np.float32)


class Matrix:
    """Assembled operator; rows of boundary nodes are replaced by identity rows."""

    def __init__(self, mesh, bcs):
        self.mesh = mesh
        self.bcs = set(bcs)  # a bc may be supplied twice; keep each once
        self.sharding = NamedSharding(mesh, P("x"))
        self._lift = jax.jit(self._lift_impl, out_shardings=NamedSharding(mesh, P()))

    @staticmethod
    def _lift_impl(coords, value):
        return jnp.stack([jnp.sum(value * jnp.cos(coords)), jnp.float32(coords.shape[0])])

    def apply_bcs(self):
        lifted = []
        for bc in self.bcs:
            coords = jax.make_array_from_process_local_data(self.sharding, bc.local_nodes())
            out = self._lift(coords, jnp.float32(bc.value))
            lifted.append((bc.boundary, np.asarray(out.addressable_data(0))))
        return lifted


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    bcs = [DirichletBC(name, 0.5 * (i + 1)) for i, name in enumerate(BOUNDARY_NODES)]
    bcs.append(DirichletBC("left", 0.5))  # duplicate from a user-supplied list
    A = Matrix(mesh, bcs)
    lifted = A.apply_bcs()
    rhs_correction = 0.0
    for name, (val, count) in sorted(lifted):
        rhs_correction += float(val)
        print("RESULT bc", name, int(count), round(float(val), 4))
    multihost_utils.sync_global_devices("bcs_applied")
    print("RESULT rhs_correction", round(rhs_correction, 4))


main()

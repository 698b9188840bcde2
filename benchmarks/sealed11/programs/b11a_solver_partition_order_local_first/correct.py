# The partition solver emits one reduction per store in a deterministic (sorted) order on every process
# Source: https://github.com/nv-legate/legate/pull/58
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

STORE_SCALE = {"velocity": 1.0, "density": 10.0, "pressure": 100.0}


@dataclass
class Operation:
    name: str
    owner: int
    stores: tuple


PROGRAM = [
    Operation("advect", owner=0, stores=("velocity", "density")),
    Operation("project", owner=1, stores=("pressure", "velocity")),
]


class PartitionSolver:
    """Assigns a partition to every store touched by the program and reduces the store norms."""

    def __init__(self, program, mesh):
        self.program = program
        self.mesh = mesh
        self.sharding = NamedSharding(mesh, P("shard"))
        self.partitions = {}
        self._norm = jax.jit(lambda x: jnp.sum(x * x), out_shardings=NamedSharding(mesh, P()))

    def solve_constraints(self):
        rank = jax.process_index()
        local_first = [op for op in self.program if op.owner == rank] + \
                      [op for op in self.program if op.owner != rank]
        for op in local_first:
            for store in op.stores:
                self.partitions.setdefault(store, {"tile": 2, "first_user": op.name})

    def launch_reductions(self):
        norms = {}
        for store in sorted(self.partitions):
            local = np.full((self.partitions[store]["tile"],),
                            STORE_SCALE[store] * (jax.process_index() + 1), np.float32)
            x = jax.make_array_from_process_local_data(self.sharding, local)
            norms[store] = float(self._norm(x))
        return norms


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("shard",))
    solver = PartitionSolver(PROGRAM, mesh)
    solver.solve_constraints()
    norms = solver.launch_reductions()
    print("RESULT stores", sorted(norms))
    print("RESULT norms", [(k, round(norms[k], 3)) for k in sorted(norms)])


main()

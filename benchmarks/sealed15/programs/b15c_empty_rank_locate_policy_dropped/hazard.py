# Probe evaluation: a process with no query points drops the agreed cell-location policy and alone enters the collective point location
# Source: https://github.com/underworldcode/underworld3/pull/656
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"cells_per_rank": 8, "probe_x": (0.05, 0.45), "n_probes": 9, "simplex": True}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_spec = NamedSharding(MESH, P("rank"))
_max = jax.jit(lambda x: jnp.max(x, axis=0), out_shardings=NamedSharding(MESH, P()))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def allreduce(fn, values):
    return np.asarray(fn(jax.make_array_from_process_local_data(_spec, np.asarray(values, np.float64)[None, :])))


class IntervalMesh:
    def __init__(self, rank, nranks):
        n = CFG["cells_per_rank"]
        self.nodes = np.linspace(0.0, 1.0, n * nranks + 1)[rank * n:(rank + 1) * n + 1]
        self.lo, self.hi = self.nodes[0], self.nodes[-1]
        # a mesh capability, identical on every process
        self.hint_is_authoritative = bool(CFG["simplex"])

    def closest_cells(self, x):
        return np.clip(np.searchsorted(self.nodes, x) - 1, 0, len(self.nodes) - 2)

    def locate_points(self, x):
        """Collective location: needs the global bounding box of the mesh (an all-reduce)."""
        box = allreduce(_max, [-self.lo, self.hi])
        x = np.clip(x, -box[0], box[1])
        return self.closest_cells(x)


def create_structure(mesh, x, hint, hint_authoritative):
    if hint_authoritative:
        return hint
    return mesh.locate_points(x)


def global_evaluate(mesh, field, x):
    """Evaluate a nodal field at the query points owned by this process, then total over processes."""
    if len(x) == 0:
        cells = create_structure(mesh, x, None, False)
    else:
        cells = create_structure(mesh, x, mesh.closest_cells(x), mesh.hint_is_authoritative)
    counts = np.asarray(multihost_utils.process_allgather(np.asarray([len(x)], np.int32))).reshape(-1)
    vals = np.zeros(0)
    if len(x):
        a, b = mesh.nodes[cells], mesh.nodes[cells + 1]
        w = (x - a) / (b - a)
        vals = (1 - w) * field[cells] + w * field[cells + 1]
    totals = allreduce(_sum, [float(np.sum(vals)), float(np.sum(vals ** 2))])
    return int(counts.sum()), totals


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    mesh = IntervalMesh(rank, nranks)
    field = np.cos(2 * np.pi * mesh.nodes) + mesh.nodes
    probes = np.linspace(*CFG["probe_x"], CFG["n_probes"])
    mine = probes[(probes >= mesh.lo) & (probes < mesh.hi)]
    n, totals = global_evaluate(mesh, field, mine)
    print("RESULT probes", n)
    print("RESULT mean", round(float(totals[0]) / n, 8))
    print("RESULT rms", round(float(np.sqrt(totals[1] / n)), 8))


main()

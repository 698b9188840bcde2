# Port of a DOLFINx bug: a mesh built on COMM_SELF by rank 0 only still runs the form JIT, whose
# cache barrier is on COMM_WORLD, so rank 0 waits in a barrier the other ranks never enter.
# Source: https://github.com/FEniCS/dolfinx/issues/1170
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CACHE_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed7_dolfinx_jit", os.environ.get("JOB_ID", "local"))


class Comm:
    def __init__(self, name: str):
        self.name = name

    @property
    def rank(self) -> int:
        return jax.process_index() if self.name == "world" else 0

    def barrier(self, tag: str) -> None:
        if self.name == "world":
            multihost_utils.sync_global_devices(tag)


COMM_WORLD, COMM_SELF = Comm("world"), Comm("self")


def ffcx_jit(comm: Comm, element: str, degree: int) -> dict:
    """Compile (here: tabulate) the coordinate element once and share it through the cache dir."""
    path = os.path.join(CACHE_DIR, f"{element}_{degree}.json")
    if COMM_WORLD.rank == 0 and not os.path.exists(path):
        os.makedirs(CACHE_DIR, exist_ok=True)
        nodes = np.linspace(0.0, 1.0, degree + 1)
        with open(path + ".tmp", "w") as f:
            json.dump({"element": element, "nodes": nodes.tolist()}, f)
        os.replace(path + ".tmp", path)
    COMM_WORLD.barrier(f"jit_{element}_{degree}")  # others wait until the module is in the cache
    with open(path) as f:
        return json.load(f)


class IntervalMesh:
    def __init__(self, comm: Comm, n: int, bounds: tuple[float, float]):
        self.comm = comm
        self.cmap = ffcx_jit(comm, "Lagrange", 1)
        self.vertices = np.linspace(bounds[0], bounds[1], n + 1, dtype=np.float32)

    def length(self) -> float:
        if self.comm.name == "self":
            return float(np.sum(np.diff(self.vertices)))
        mesh = jax.make_mesh((jax.device_count(),), ("x",))
        cells = np.diff(self.vertices)
        pad = (-cells.size) % jax.device_count()
        cells = np.pad(cells, (0, pad))
        arr = jax.make_array_from_callback(cells.shape, NamedSharding(mesh, P("x")), lambda i: cells[i])
        return float(jax.jit(jnp.sum)(arr))


if COMM_WORLD.rank == 0:
    local_mesh = IntervalMesh(COMM_SELF, 5, (0.0, 1.0))
    print(f"local mesh length {local_mesh.length():.3f}")

world_mesh = IntervalMesh(COMM_WORLD, 8, (0.0, 2.0))
print(f"RESULT world_length {world_mesh.length():.4f}")
print(f"RESULT cmap_nodes {world_mesh.cmap['nodes']}")

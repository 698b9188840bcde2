# Distributed STL output of boundary sub-model-parts (inlet / outlet / walls) of a slab-partitioned channel mesh
# Source: https://github.com/KratosMultiphysics/Kratos/pull/11656
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import hashlib
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NX, NY, NZ = 8, 4, 3
OUT_DIR = os.path.join(tempfile.gettempdir(), "channel_stl_" + os.environ.get("JOB_ID", "local"))


class SubModelPart:
    def __init__(self, name, conditions, elements=()):
        self.name = name
        self.conditions = np.asarray(conditions, np.float32).reshape(-1, 3, 3)
        self.elements = np.asarray(elements, np.float32).reshape(-1, 3, 3)

    def NumberOfConditions(self):
        return len(self.conditions)

    def NumberOfElements(self):
        return len(self.elements)


def quad_to_triangles(p0, p1, p2, p3):
    return [(p0, p1, p2), (p0, p2, p3)]


def build_local_partition():
    """Slab partition along x: this rank owns cells [x0, x1) and the boundary faces adjacent to them."""
    rank, size = jax.process_index(), jax.process_count()
    x0, x1 = NX * rank // size, NX * (rank + 1) // size
    inlet, outlet, walls = [], [], []
    for j in range(NY):
        for k in range(NZ):
            face = [(0, j, k), (0, j + 1, k), (0, j + 1, k + 1), (0, j, k + 1)]
            if x0 == 0:
                inlet += quad_to_triangles(*face)
            if x1 == NX:
                outlet += quad_to_triangles(*[(NX, b, c) for _, b, c in face])
    for i in range(x0, x1):
        for k in range(NZ):
            walls += quad_to_triangles((i, 0, k), (i + 1, 0, k), (i + 1, 0, k + 1), (i, 0, k + 1))
            walls += quad_to_triangles((i, NY, k), (i, NY, k + 1), (i + 1, NY, k + 1), (i + 1, NY, k))
    return {"inlet": SubModelPart("inlet", inlet), "outlet": SubModelPart("outlet", outlet),
            "walls": SubModelPart("walls", walls)}


def facet_normal(tri):
    n = np.cross(tri[1] - tri[0], tri[2] - tri[0])
    return n / max(np.linalg.norm(n), 1e-12)


def write_entity_block(entities, solid_name, path):
    """Gather all ranks' facets on rank 0 (in rank order) and write them as one ASCII STL solid."""
    counts = np.asarray(multihost_utils.process_allgather(np.int32(len(entities))))
    padded = np.zeros((int(counts.max()), 3, 3), np.float32)
    padded[:len(entities)] = entities
    gathered = np.asarray(multihost_utils.process_allgather(padded))
    facets = np.concatenate([gathered[r, :counts[r]] for r in range(len(counts))])
    if jax.process_index() == 0:
        with open(path, "w") as f:
            f.write(f"solid {solid_name}\n")
            for tri in facets:
                f.write("  facet normal {:e} {:e} {:e}\n    outer loop\n".format(*facet_normal(tri)))
                for v in tri:
                    f.write("      vertex {:e} {:e} {:e}\n".format(*v))
                f.write("    endloop\n  endfacet\n")
            f.write(f"endsolid {solid_name}\n")
    return len(facets), hashlib.sha1(facets.tobytes()).hexdigest()[:12]


def sum_all(value):
    return int(np.asarray(multihost_utils.process_allgather(np.int32(value))).sum())


def write_model_part(model_part, path):
    number_of_conditions = sum_all(model_part.NumberOfConditions())
    number_of_elements = sum_all(model_part.NumberOfElements())
    if number_of_conditions > 0:
        return write_entity_block(model_part.conditions, model_part.name, path)
    if number_of_elements > 0:
        return write_entity_block(model_part.elements, model_part.name, path)
    return 0, "empty"


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    parts = build_local_partition()
    summary = {}
    for name in ("inlet", "walls", "outlet"):
        summary[name] = write_model_part(parts[name], os.path.join(OUT_DIR, f"{name}.stl"))
    multihost_utils.sync_global_devices("stl output done")
    for name, (n, digest) in summary.items():
        print("RESULT", name, n, digest)


if __name__ == "__main__":
    main()

# The parallel element writer validates the local range before its collective write, so a rank with no elements leaves
# Source: https://github.com/CGNS/CGNS/pull/21
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import json
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed13_zone_write_empty_range_return",
                       os.environ.get("JOB_ID", "local"))
CG_OK, CG_ERROR = 0, 1
MAX_LOCAL = 8  # per-rank slab of the collective dataset write


def partition_zones(rank):
    """After load balancing: the fluid zone is split over both ranks, the small wall zone sits on rank 0."""
    fluid = {"name": "fluid", "start": 1 + rank * 6, "end": 6 + rank * 6}
    if rank == 0:
        wall = {"name": "wall", "start": 1, "end": 4}
    else:
        wall = {"name": "wall", "start": 1, "end": 0}  # no wall elements on this rank
    for z in (fluid, wall):
        n = z["end"] - z["start"] + 1
        z["elements"] = (np.arange(n, dtype=np.int64) + z["start"]) * 10 + rank if n > 0 else None
    return [fluid, wall]


def dataset_write_collective(name, start, elements):
    """Like H5Dwrite with a collective transfer list: every rank contributes its slab; rank 0 stores the file."""
    slab = np.zeros((MAX_LOCAL + 2,), np.int64)
    n = 0 if elements is None else len(elements)
    slab[0], slab[1] = start, n
    if n:
        slab[2:2 + n] = elements
    rows = multihost_utils.process_allgather(slab)
    out = []
    for row in rows:
        out.extend(int(v) for v in row[2:2 + int(row[1])])
    if jax.process_index() == 0:
        os.makedirs(OUT_DIR, exist_ok=True)
        with open(os.path.join(OUT_DIR, f"{name}.json"), "w") as f:
            json.dump(sorted(out), f)
    return sorted(out)


def cgp_elements_write_data(zone):
    start, end, elements = zone["start"], zone["end"], zone["elements"]
    if start > end:
        print(f"cgp_elements_write_data: invalid element range {start}..{end} for zone {zone['name']}")
        return CG_ERROR, []
    return CG_OK, dataset_write_collective(zone["name"], start, elements)


def main():
    rank = jax.process_index()
    written = {}
    for zone in partition_zones(rank):
        ier, ids = cgp_elements_write_data(zone)
        if ier != CG_OK:
            continue  # the caller logs and carries on with the next zone
        written[zone["name"]] = ids
    wall = written.get("wall", [])
    summary = multihost_utils.process_allgather(np.array([len(written.get("fluid", [])), len(wall), sum(wall)], np.int64))
    print("RESULT fluid_elements", int(summary[:, 0].max()))
    print("RESULT wall_elements", int(summary[:, 1].max()))
    print("RESULT wall_checksum", int(summary[:, 2].max()))


main()

# PIC restart: the parallel particle reader returns early on ranks that own no particles of a species, skipping the collective offset exchange
# Source: https://github.com/ComputationalRadiationPhysics/libSplash/issues/148
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
import tempfile
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SPECIES = ("beam", "electrons")


def workdir():
    d = Path(tempfile.gettempdir()) / "mcjax_sealed16_zero_count_restart_read" / os.environ.get("JOB_ID", "local")
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_previous_run(base, nproc):
    """The checkpoint of the previous run: one particle record per species plus the per-rank counts."""
    rng = np.random.default_rng(7)
    per_rank = {"beam": [64] + [0] * (nproc - 1),          # the beam was injected in the first slab only
                "electrons": [96] * nproc}
    for name in SPECIES:
        total = sum(per_rank[name])
        np.save(base / f"{name}.npy", rng.normal(size=(total, 2)).astype(np.float32))
        np.save(base / f"{name}_counts.npy", np.asarray(per_rank[name], np.int32))


class ParallelDataCollector:
    def __init__(self, base, rank):
        self.base, self.rank = base, rank

    def local_count(self, name):
        return int(np.load(self.base / f"{name}_counts.npy")[self.rank])

    def read(self, name, count):
        """Collective read of this rank's `count` records of dataset `name`."""
        if count == 0:                                      # nothing to read on this rank
            return np.zeros((0, 2), np.float32)
        counts = np.asarray(multihost_utils.process_allgather(np.int32(count)))
        offset = int(counts[: self.rank].sum())
        data = np.load(self.base / f"{name}.npy", mmap_mode="r")
        return np.array(data[offset: offset + count])


def kinetic_energy(particles, mass):
    local = np.float32(0.5 * mass * np.sum(particles[:, 1] ** 2))
    return float(np.asarray(multihost_utils.process_allgather(local)).sum())


def main():
    rank, nproc = jax.process_index(), jax.process_count()
    base = workdir()
    if rank == 0:
        write_previous_run(base, nproc)
    multihost_utils.sync_global_devices("checkpoint_written")

    reader = ParallelDataCollector(base, rank)
    restored = {}
    for name in SPECIES:
        restored[name] = reader.read(name, reader.local_count(name))
    for name, mass in (("beam", 1.0), ("electrons", 1.0)):
        print("RESULT energy", name, round(kinetic_energy(restored[name], mass), 3))
    multihost_utils.sync_global_devices("restart_done")
    print("RESULT restored", sorted(restored))


if __name__ == "__main__":
    main()

# Parallel file: every process creates every rank's dataset (sizes exchanged first), then writes its own
# Source: https://github.com/BlueBrain/HighFive/issues/249 (port of a parallel-HDF5 metadata bug to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
import zlib

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class MPIOFile:
    """Every process keeps its own metadata cache; raw data goes through collective transfers."""

    def __init__(self, nbytes: int = 256):
        self.heap = np.zeros((nbytes,), dtype=np.float64)
        self.index: dict[str, tuple[int, int]] = {}
        self.eoa = 0  # end of allocated space

    def _allocate(self, size: int) -> int:
        # file-space allocation is collective: every process must move the end-of-address alike
        ends = np.asarray(multihost_utils.process_allgather(np.array([self.eoa + size], dtype=np.int64)))
        offset, self.eoa = self.eoa, int(ends.max())
        return offset

    def create_dataset(self, path: str, size: int) -> str:
        self.index[path] = (self._allocate(size), size)  # recorded in this process's metadata cache
        return path

    def write(self, path: str, values: np.ndarray) -> None:
        offset, size = self.index[path]
        rec = np.zeros((2 + len(self.heap),), dtype=np.float64)
        rec[0], rec[1] = offset, size
        rec[2:2 + size] = values
        for other in np.asarray(multihost_utils.process_allgather(rec[None, :], tiled=True)):
            o, n = int(other[0]), int(other[1])
            self.heap[o:o + n] = other[2:2 + n]

    def listing(self) -> str:
        return ",".join(f"{p}:{o}+{n}" for p, (o, n) in sorted(self.index.items()))


def create_groups_to_dataset(f: MPIOFile, path: str, size: int) -> str:
    return f.create_dataset(path, size)


def main():
    rank = jax.process_index()
    f = MPIOFile()
    x = np.full((40 + rank,), 3.0 + rank)
    # fix: structure changes are made by all processes alike: create every rank's dataset everywhere
    sizes = np.asarray(multihost_utils.process_allgather(np.array([x.size], dtype=np.int64))).ravel()
    for r, n in enumerate(sizes):
        create_groups_to_dataset(f, f"/{r}/x", int(n))
    path = f"/{rank}/x"
    f.write(path, x)
    multihost_utils.sync_global_devices("file_closed")
    print(f"RESULT datasets={f.listing()}")
    print(f"RESULT heap_crc={zlib.crc32(f.heap.tobytes())}")


if __name__ == "__main__":
    main()

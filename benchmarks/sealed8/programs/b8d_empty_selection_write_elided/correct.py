# Collective write where a process with an empty selection still makes the (no-op) transfer
# Source: https://github.com/h5py/h5py/issues/965 (port of an h5py/mpio collective-write hang to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NX, NY = 8, 5  # global field, decomposed along x (first axis)


class Hyperslab:
    def __init__(self, start, stop):
        self.start, self.stop = start, max(stop, start)

    @property
    def nselect(self) -> int:
        return self.stop - self.start


class CollectiveDataset:
    """Stand-in for dset.collective on an h5py dataset opened with the mpio driver."""

    def __init__(self, length: int):
        self.buf = np.zeros((length,), dtype=np.float32)

    def _h5d_write(self, slab: Hyperslab, values: np.ndarray) -> None:
        rec = np.zeros((2 + len(self.buf),), dtype=np.float32)
        rec[0], rec[1] = slab.start, slab.nselect
        rec[2:2 + slab.nselect] = values
        for other in np.asarray(multihost_utils.process_allgather(rec[None, :], tiled=True)):
            s, n = int(other[0]), int(other[1])
            self.buf[s:s + n] = other[2:2 + n]

    def write(self, slab: Hyperslab, values: np.ndarray) -> None:
        # fix: a process with nothing to write still takes part in the collective transfer
        self._h5d_write(slab, values)


class DistributedField:
    def __init__(self, pid: int, nproc: int):
        rows = NX // nproc
        self.x0, self.x1 = pid * rows, (pid + 1) * rows
        gx, gy = np.meshgrid(np.arange(self.x0, self.x1), np.arange(NY), indexing="ij")
        self.local = (gx * 10 + gy).astype(np.float32)

    def row_slab(self, x: int):
        """The part of global row x (a pencil along y) owned here; empty unless x is local."""
        if self.x0 <= x < self.x1:
            return Hyperslab(0, NY), self.local[x - self.x0]
        return Hyperslab(0, 0), np.zeros((0,), dtype=np.float32)

    def column_slab(self, y: int):
        return Hyperslab(self.x0, self.x1), self.local[:, y]


def main():
    field = DistributedField(jax.process_index(), jax.process_count())
    col = CollectiveDataset(NX)
    col.write(*field.column_slab(0))
    row = CollectiveDataset(NY)
    row.write(*field.row_slab(0))  # only the process owning x=0 has data for the first global row
    multihost_utils.sync_global_devices("pencils_written")
    print(f"RESULT column0={col.buf.tolist()}")
    print(f"RESULT row0={row.buf.tolist()}")


if __name__ == "__main__":
    main()

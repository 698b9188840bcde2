# Collective write of a broadcast scalar: one collective per broadcast chunk, and the chunk count is the local block's
# Source: https://github.com/h5py/h5py/issues/1108 (port of an h5py/mpio collective-write deadlock to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N1, N2 = 9, 6  # global 2D array, rows split over the processes (uneven on purpose, as in the report)


class Selection:
    def __init__(self, start: int, count: int, ncols: int):
        self.start, self.count, self.ncols = start, count, ncols

    @property
    def mshape(self):
        return (self.count, self.ncols)

    def broadcast(self, value_shape):
        """Yield one sub-selection per copy of the (smaller) value, like h5py's SimpleSelection.broadcast."""
        if value_shape == self.mshape:
            yield self.start, self.count
            return
        for r in range(self.count):  # a scalar value: one row at a time
            yield self.start + r, 1


class ParallelDataset:
    """Stand-in for an h5py dataset opened with driver='mpio' and collective transfers."""

    def __init__(self, shape):
        self.data = np.zeros(shape, dtype=np.float32)
        self.collective = True

    def _write_direct(self, row: int, count: int, block: np.ndarray) -> None:
        # a collective H5Dwrite: every process hands in its piece and the file sees all of them
        rec = np.zeros((2 + N1 * N2,), dtype=np.float32)
        rec[0], rec[1] = row, count
        rec[2:2 + block.size] = block.ravel()
        every = np.asarray(multihost_utils.process_allgather(rec[None, :], tiled=True))
        for other in every:
            r, n = int(other[0]), int(other[1])
            self.data[r:r + n] = other[2:2 + n * N2].reshape(n, N2)

    def __setitem__(self, sel: Selection, value) -> None:
        value = np.asarray(value, dtype=np.float32)
        for row, count in sel.broadcast(value.shape):
            self._write_direct(row, count, np.broadcast_to(value, (count, N2)))


def local_rows(pid: int, nproc: int):
    base, extra = divmod(N1, nproc)
    count = base + (1 if pid < extra else 0)
    start = pid * base + min(pid, extra)
    return start, count


def main():
    pid, nproc = jax.process_index(), jax.process_count()
    dset = ParallelDataset((N1, N2))
    start, count = local_rows(pid, nproc)
    dset[Selection(start, count, N2)] = float(pid + 1)  # broadcast a scalar over the local block
    multihost_utils.sync_global_devices("scalar_write_done")
    print(f"RESULT sum={float(dset.data.sum()):.1f}")
    print(f"RESULT rows_written={int((dset.data != 0).any(axis=1).sum())}")


if __name__ == "__main__":
    main()

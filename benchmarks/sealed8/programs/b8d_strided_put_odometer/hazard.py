# Strided collective put: the default path walks an odometer over the local elements, one collective per element
# Source: https://github.com/Unidata/netcdf-c/issues/448 (port of a netCDF-4 parallel collective-write hang to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NT, NX = 4, 12  # a (time, x) variable; output keeps every other x point of some time levels


class Odometer:
    def __init__(self, start, count, stride):
        self.start, self.count, self.stride = list(start), list(count), list(stride)
        self.index = [0] * len(start)

    def more(self) -> bool:
        return all(c > 0 for c in self.count) and self.index[0] < self.count[0]

    def position(self):
        return [s + i * st for s, i, st in zip(self.start, self.index, self.stride)]

    def next(self) -> None:
        for d in reversed(range(len(self.index))):
            self.index[d] += 1
            if d == 0 or self.index[d] < self.count[d]:
                return
            self.index[d] = 0


class ParallelVar:
    """A netCDF-4 variable in NC_COLLECTIVE access mode."""

    def __init__(self):
        self.data = np.full((NT, NX), -1.0, dtype=np.float32)

    def put_vara(self, start, count, values: np.ndarray) -> None:
        # H5Dwrite in collective mode: every process takes part, with or without elements
        rec = np.full((4 + NT * NX,), 0.0, dtype=np.float32)
        rec[:4] = [*start, *count]
        rec[4:4 + values.size] = values.ravel()
        for other in np.asarray(multihost_utils.process_allgather(rec[None, :], tiled=True)):
            (t0, x0, nt, nx), vals = other[:4].astype(int), other[4:]
            self.data[t0:t0 + nt, x0:x0 + nx] = vals[:nt * nx].reshape(nt, nx)

    def put_vars(self, start, count, stride, values: np.ndarray) -> None:
        if all(s == 1 for s in stride):
            self.put_vara(start, count, values)
            return
        odom = Odometer(start, count, stride)  # the default strided path: one element at a time
        flat = values.ravel()
        k = 0
        while odom.more():
            self.put_vara(odom.position(), [1, 1], flat[k:k + 1])
            k += 1
            odom.next()


def main():
    pid = jax.process_index()
    var = ParallelVar()
    var.put_vars([0, 0], [NT, NX], [1, 1], np.zeros((NT, NX), dtype=np.float32))
    # the sampled output: process 0 owns the time levels being sampled, process 1 has nothing this time
    count = [2, NX // 2] if pid == 0 else [0, 0]
    values = np.arange(count[0] * count[1], dtype=np.float32) + 1.0
    var.put_vars([0, 0], count, [1, 2], values)
    multihost_utils.sync_global_devices("vars_written")
    print(f"RESULT total={float(var.data.sum()):.1f}")
    print(f"RESULT nonzero={int(np.count_nonzero(var.data))}")


if __name__ == "__main__":
    main()

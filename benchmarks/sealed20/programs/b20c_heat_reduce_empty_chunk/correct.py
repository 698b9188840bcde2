# Distributed sightline statistics in the style of Heat's DNDarray: every process holds a chunk of
# rows (split=0); reductions combine per-process partial results with an all-reduce.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_SIGHTLINES = 12
NUM_PIXELS = 16
DLA_THRESHOLD = 20.3


class DNDarray:
    """A global array of shape `gshape`, split along axis `split`; this process holds `larray`."""

    def __init__(self, larray, gshape, split):
        self.larray = larray
        self.gshape = gshape
        self.split = split

    @property
    def lshape(self):
        return self.larray.shape


def chunk(n, rank, size):
    base, rem = divmod(n, size)
    start = rank * base + min(rank, rem)
    return start, start + base + (1 if rank < rem else 0)


def array(global_data, split=0):
    rank, size = jax.process_index(), jax.process_count()
    lo, hi = chunk(global_data.shape[split], rank, size)
    return DNDarray(np.ascontiguousarray(global_data[lo:hi]), global_data.shape, split)


def allreduce(partial, op):
    gathered = np.asarray(multihost_utils.process_allgather(partial))
    return op(gathered, axis=0)


def _reduce_op(x, partial_op, reduction_op, axis, neutral):
    local = x.larray
    if axis == x.split and 0 in x.lshape:
        local = np.full((1,) + x.lshape[1:], neutral, dtype=local.dtype)
    partial = partial_op(local, axis=axis)
    if axis == x.split:
        return allreduce(partial, reduction_op)
    return partial


def ht_max(x, axis):
    return _reduce_op(x, np.max, np.max, axis, neutral=-np.inf)


def ht_sum(x, axis):
    return _reduce_op(x, np.sum, np.sum, axis, neutral=0)


def select_rows(x, mask_local):
    """Boolean row selection; the result keeps its rows where they were (not rebalanced)."""
    local = x.larray[mask_local]
    counts = np.asarray(multihost_utils.process_allgather(np.int32(local.shape[0])))
    return DNDarray(local, (int(counts.sum()),) + x.gshape[1:], x.split)


def make_column_densities(seed=7):
    rng = np.random.default_rng(seed)
    logn = rng.normal(17.0, 1.0, size=(NUM_SIGHTLINES, NUM_PIXELS))
    logn[1, 5:9] = [20.5, 21.1, 20.9, 20.4]
    return logn.astype(np.float32)


def main():
    colden = array(make_column_densities(), split=0)
    total = ht_sum(colden, axis=0)
    peak = ht_max(colden, axis=1)
    is_dla = peak > DLA_THRESHOLD
    dlas = select_rows(colden, is_dla)
    print(f"process {jax.process_index()}: {dlas.lshape[0]} of {dlas.gshape[0]} DLA sightlines held here")

    profile = ht_max(dlas, axis=0)
    mean_profile = ht_sum(dlas, axis=0) / dlas.gshape[0]

    print("RESULT num_dlas", dlas.gshape[0])
    print("RESULT total_checksum", round(float(total.sum()), 3))
    print("RESULT dla_peak_profile", np.round(profile, 2).tolist())
    print("RESULT dla_mean_profile_sum", round(float(mean_profile.sum()), 3))


if __name__ == "__main__":
    main()

# Per-feature histogram all-reduces are skipped on workers whose own rows say the feature needs no more work
# Source: https://github.com/dmlc/rabit/issues/19
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
MESH = jax.make_mesh((jax.device_count(),), ("workers",), axis_types=(jax.sharding.AxisType.Auto,))
_SUM = jax.jit(lambda a: a.sum(axis=0), out_shardings=NamedSharding(MESH, P()))
NUM_FEATURES, NUM_BINS, ROWS = 4, 4, 16
EXCLUDED_FEATURES = {3}  # from the training config: the same on every worker


def allreduce_sum(local):
    arr = jax.make_array_from_process_local_data(NamedSharding(MESH, P("workers", None)),
                                                 np.asarray(local, np.float32)[None, :])
    return np.asarray(_SUM(arr).addressable_data(0))


class TrainData:
    """The rows of this worker: binned features, gradients and hessians of the current boosting round."""

    def __init__(self):
        rng = np.random.default_rng(11 + jax.process_index())
        self.bins = rng.integers(0, NUM_BINS, size=(ROWS, NUM_FEATURES))
        if jax.process_index() == 1:
            self.bins[:, 2] = 1  # on this worker's rows feature 2 is constant
        self.grad = rng.normal(size=ROWS).astype(np.float32)
        self.hess = np.ones(ROWS, np.float32)


def is_feature_ok(f):
    return f not in EXCLUDED_FEATURES


def smaller_child_histogram(data, f):
    g = np.bincount(data.bins[:, f], weights=data.grad, minlength=NUM_BINS)
    h = np.bincount(data.bins[:, f], weights=data.hess, minlength=NUM_BINS)
    need_more_step = np.count_nonzero(h) > 1  # a split is only possible with two non-empty bins
    return np.concatenate([g, h]), need_more_step


def split_gain(hist, lam=1.0):
    g, h = hist[:NUM_BINS], hist[NUM_BINS:]
    gl, hl = np.cumsum(g)[:-1], np.cumsum(h)[:-1]
    gr, hr = g.sum() - gl, h.sum() - hl
    gain = gl ** 2 / (hl + lam) + gr ** 2 / (hr + lam) - g.sum() ** 2 / (h.sum() + lam)
    return float(gain.max()), int(gain.argmax())


def find_best_split(data):
    local, need_more_step = {}, {}
    for f in range(NUM_FEATURES):
        if is_feature_ok(f):
            local[f], need_more_step[f] = smaller_child_histogram(data, f)
    best = (-np.inf, None, None)
    for f in range(NUM_FEATURES):
        if is_feature_ok(f) and need_more_step[f]:
            hist = allreduce_sum(local[f])  # sum the histograms of all workers
            gain, cut = split_gain(hist)
            if gain > best[0]:
                best = (gain, f, cut)
    return best


def main():
    gain, feature, cut = find_best_split(TrainData())
    print(f"RESULT best_feature {feature} cut {cut}")
    print(f"RESULT gain {gain:.4f}")


main()

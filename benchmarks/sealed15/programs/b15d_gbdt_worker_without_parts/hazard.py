# Dask-LightGBM-style data-parallel boosting: a worker that holds no data partitions returns instead of joining the histogram all-reduces
# Source: https://github.com/lightgbm-org/LightGBM/issues/3882
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("workers",))
PER_WORKER = NamedSharding(MESH, P("workers"))


@dataclass
class BoostParams:
    n_features: int = 3
    n_bins: int = 8
    n_estimators: int = 4
    learning_rate: float = 0.3


def partitions_on_this_worker():
    """Where the persisted dask partitions live: all three landed on the first worker."""
    placement = {0: [0, 1, 2], 1: []}
    parts = []
    for p in placement[jax.process_index()]:
        rng = np.random.default_rng(p)
        x = rng.uniform(0, 1, size=(16, 3)).astype(np.float32)
        y = (2.0 * (x[:, 0] > 0.5) - x[:, 2]).astype(np.float32)
        parts.append((x, y))
    return parts


@jax.jit
def _sum_over_workers(h):
    return jnp.sum(h, axis=0)


def allreduce_histogram(local_hist):
    """Network::Allreduce of the gradient histograms: one row per worker, summed."""
    g = jax.make_array_from_process_local_data(PER_WORKER, local_hist[None])
    return np.asarray(_sum_over_workers(g))


def local_histogram(xb, grad, params):
    hist = np.zeros((params.n_features, params.n_bins, 2), np.float32)
    for f in range(params.n_features):
        np.add.at(hist[f, :, 0], xb[:, f], grad)
        np.add.at(hist[f, :, 1], xb[:, f], 1.0)
    return hist


def best_stump(hist):
    best = (-1.0, 0, 0, 0.0, 0.0)
    for f in range(hist.shape[0]):
        gl, nl = np.cumsum(hist[f, :, 0]), np.cumsum(hist[f, :, 1])
        gt, nt = gl[-1], nl[-1]
        for b in range(hist.shape[1] - 1):
            nr = nt - nl[b]
            if nl[b] == 0 or nr == 0:
                continue
            gain = gl[b] ** 2 / nl[b] + (gt - gl[b]) ** 2 / nr
            if gain > best[0]:
                best = (gain, f, b, -gl[b] / nl[b], -(gt - gl[b]) / nr)
    return best


def train_part(params, parts):
    if not parts:                        # nothing to train on here
        return None
    x = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, params.n_features), np.float32)
    y = np.concatenate([p[1] for p in parts]) if parts else np.zeros((0,), np.float32)
    xb = np.minimum((x * params.n_bins).astype(np.int64), params.n_bins - 1)
    pred = np.zeros_like(y)
    trees = []
    for _ in range(params.n_estimators):
        grad = pred - y
        hist = allreduce_histogram(local_histogram(xb, grad, params))
        gain, f, b, left, right = best_stump(hist)
        trees.append((int(f), int(b), round(float(left), 4), round(float(right), 4)))
        pred = pred + params.learning_rate * np.where(xb[:, f] <= b, left, right)
    return trees


def main():
    params = BoostParams()
    trees = train_part(params, partitions_on_this_worker())
    print("RESULT trees", trees)


if __name__ == "__main__":
    main()

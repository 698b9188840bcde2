# Distributed histogram boosting with a wall-clock budget callback (max_running_time_in_minutes)
# Source: https://github.com/alipay/ant-xgboost/pull/21
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
from datetime import datetime

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PARAMS = {"eta": 0.3, "max_bin": 32, "num_boost_round": 400, "max_running_time_in_minutes": 0.01}
N_ROWS, N_FEATURES = 60_000, 6


class EarlyStopException(Exception):
    def __init__(self, best_iteration):
        super().__init__(best_iteration)
        self.best_iteration = best_iteration


def max_running_time(max_running_time_in_minutes, verbose=True):
    state = {}

    def init(env):
        state["start_time"] = datetime.now()
        state["best_msg"] = ""

    def callback(env):
        if not state:
            init(env)
        state["best_msg"] = f"[{env['iteration']}]\ttrain-rmse:{env['rmse']:.5f}"
        stop = False
        if env["rank"] == 0:
            elapsed_time_in_mins = (datetime.now() - state["start_time"]).total_seconds() / 60.0
            stop = elapsed_time_in_mins > max_running_time_in_minutes
        stop = bool(multihost_utils.broadcast_one_to_all(np.array(stop)))
        if stop:
            if verbose and env["rank"] == 0:
                print(f"Exceeds maximum running time. Best iteration:\n{state['best_msg']}")
            raise EarlyStopException(env["iteration"])

    return callback


def load_partition(rank):
    rng = np.random.default_rng(1000 + rank)
    x = rng.normal(size=(N_ROWS, N_FEATURES)).astype(np.float32)
    y = (np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.1 * rng.normal(size=N_ROWS)).astype(np.float32)
    return x, y


def build_histograms(x, grad, edges):
    hist = np.zeros((N_FEATURES, PARAMS["max_bin"], 2), np.float32)
    for f in range(N_FEATURES):
        idx = np.clip(np.searchsorted(edges[f], x[:, f]), 0, PARAMS["max_bin"] - 1)
        hist[f, :, 0] = np.bincount(idx, weights=grad, minlength=PARAMS["max_bin"])
        hist[f, :, 1] = np.bincount(idx, minlength=PARAMS["max_bin"])
    return hist


def allreduce_sum(mesh, local):
    sharding = NamedSharding(mesh, P("workers"))
    stacked = jax.make_array_from_process_local_data(sharding, local[None], (jax.process_count(),) + local.shape)
    total = jax.jit(lambda a: jnp.sum(a, axis=0), out_shardings=NamedSharding(mesh, P()))(stacked)
    return np.asarray(total.addressable_shards[0].data)


def best_stump(hist, edges):
    g, n = hist[..., 0], hist[..., 1]
    gl, nl = np.cumsum(g, axis=1), np.cumsum(n, axis=1)
    gr, nr = g.sum(axis=1, keepdims=True) - gl, n.sum(axis=1, keepdims=True) - nl
    gain = gl ** 2 / (nl + 1.0) + gr ** 2 / (nr + 1.0)
    f, b = np.unravel_index(np.argmax(gain), gain.shape)
    return int(f), float(edges[f][min(b, len(edges[f]) - 1)]), float(gl[f, b] / (nl[f, b] + 1.0)), float(gr[f, b] / (nr[f, b] + 1.0))


def train(params, mesh, x, y, callbacks):
    edges = [np.linspace(-3.0, 3.0, params["max_bin"] - 1, dtype=np.float32) for _ in range(N_FEATURES)]
    pred = np.zeros_like(y)
    trees = []
    for iteration in range(params["num_boost_round"]):
        grad = y - pred
        hist = allreduce_sum(mesh, build_histograms(x, grad, edges))
        f, thr, left, right = best_stump(hist, edges)
        trees.append((f, thr, left, right))
        pred += params["eta"] * np.where(x[:, f] <= thr, left, right).astype(np.float32)
        sq = allreduce_sum(mesh, np.array([np.sum((y - pred) ** 2), y.size], np.float32))
        env = {"iteration": iteration, "rank": jax.process_index(), "rmse": float(np.sqrt(sq[0] / sq[1]))}
        try:
            for cb in callbacks:
                cb(env)
        except EarlyStopException as e:
            return trees[: e.best_iteration + 1], env["rmse"]
    return trees, env["rmse"]


def main():
    mesh = Mesh(np.array(jax.devices()), ("workers",))
    x, y = load_partition(jax.process_index())
    trees, rmse = train(PARAMS, mesh, x, y, [max_running_time(PARAMS["max_running_time_in_minutes"])])
    multihost_utils.sync_global_devices("training_done")
    print("RESULT n_trees", len(trees))
    print("RESULT rmse", round(rmse, 4))


if __name__ == "__main__":
    main()

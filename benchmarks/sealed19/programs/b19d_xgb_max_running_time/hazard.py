# Distributed histogram gradient boosting (rabit-style allreduce) with a max-running-time early stop callback
# Source: https://github.com/alipay/ant-xgboost/pull/21
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
from datetime import datetime

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_BINS = 16


class EarlyStopException(Exception):
    def __init__(self, best_iteration):
        super().__init__()
        self.best_iteration = best_iteration


def allreduce_sum(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x))).sum(axis=0)


def max_running_time(max_running_time_in_minutes, verbose=True):
    state = {}

    def callback(env):
        if not state:
            state["start_time"] = datetime.now()
            state["best_score"], state["best_iteration"] = float("inf"), 0
        score = env["evaluation_result"]
        if score < state["best_score"]:
            state["best_score"], state["best_iteration"] = score, env["iteration"]
        if env["rank"] == 0:
            elapsed_time_in_mins = (datetime.now() - state["start_time"]).seconds / 60.0
            if elapsed_time_in_mins > max_running_time_in_minutes:
                if verbose:
                    print(f"Exceeds maximum running time. Best iteration: {state['best_iteration']}", flush=True)
                raise EarlyStopException(state["best_iteration"])
    return callback


@jax.jit
def grad_hess(pred, label):
    p = jax.nn.sigmoid(pred)
    return p - label, p * (1.0 - p)


def build_histogram(bins, g, h):
    hist_g = np.stack([np.bincount(bins[:, f], weights=g, minlength=NUM_BINS) for f in range(bins.shape[1])])
    hist_h = np.stack([np.bincount(bins[:, f], weights=h, minlength=NUM_BINS) for f in range(bins.shape[1])])
    return np.stack([hist_g, hist_h])


def best_split(hist, reg_lambda=1.0):
    cg, ch = np.cumsum(hist[0], axis=1), np.cumsum(hist[1], axis=1)
    tg, th = cg[:, -1:], ch[:, -1:]
    gain = cg ** 2 / (ch + reg_lambda) + (tg - cg) ** 2 / (th - ch + reg_lambda)
    f, b = np.unravel_index(np.argmax(gain[:, :-1]), gain[:, :-1].shape)
    left = -cg[f, b] / (ch[f, b] + reg_lambda)
    right = -(tg[f, 0] - cg[f, b]) / (th[f, 0] - ch[f, b] + reg_lambda)
    return int(f), int(b), float(left), float(right)


def train(params, dtrain, deval, num_boost_round, callbacks):
    rank = jax.process_index()
    bins, label = dtrain
    ebins, elabel = deval
    pred, epred = np.zeros(len(label), np.float32), np.zeros(len(elabel), np.float32)
    trees = []
    try:
        for i in range(num_boost_round):
            g, h = (np.asarray(a) for a in grad_hess(pred, label))
            hist = allreduce_sum(build_histogram(bins, g, h))
            f, b, left, right = best_split(hist)
            trees.append((f, b, left, right))
            pred += params["eta"] * np.where(bins[:, f] <= b, left, right)
            epred += params["eta"] * np.where(ebins[:, f] <= b, left, right)
            loss = np.logaddexp(0.0, epred) - elabel * epred
            eval_sum = allreduce_sum(np.array([loss.sum(), len(loss)]))
            env = {"iteration": i, "rank": rank, "evaluation_result": eval_sum[0] / eval_sum[1]}
            for cb in callbacks:
                cb(env)
    except EarlyStopException as e:
        return trees[: e.best_iteration + 1]
    return trees


def make_data(rank, n):
    rng = np.random.default_rng(7 + rank)
    x = rng.normal(size=(n, 5))
    y = (x[:, 0] + 0.5 * x[:, 3] + 0.3 * rng.normal(size=n) > 0).astype(np.float32)
    edges = np.linspace(-2.5, 2.5, NUM_BINS - 1)
    return np.digitize(x, edges).astype(np.int64), y


def main():
    rank = jax.process_index()
    params = {"eta": 0.3, "max_running_time_in_minutes": 0.01}
    dtrain, deval = make_data(rank, 400), make_data(rank + 10, 100)
    trees = train(params, dtrain, deval, num_boost_round=5000,
                  callbacks=[max_running_time(params["max_running_time_in_minutes"])])
    multihost_utils.sync_global_devices("training_finished")
    print("RESULT num_trees", len(trees))
    print("RESULT first_split", trees[0][:2])


if __name__ == "__main__":
    main()

# Distributed training in "algorithm mode": container-defined custom eval metrics, reduced across hosts each round
# Source: https://github.com/aws/sagemaker-xgboost-container/pull/322
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def accuracy(preds, labels):
    return "accuracy", float(np.mean((preds > 0.5) == labels))


def f1(preds, labels):
    p = preds > 0.5
    tp = np.sum(p & (labels == 1))
    return "f1", float(2 * tp / max(np.sum(p) + np.sum(labels == 1), 1))


def mse(preds, labels):
    return "mse", float(np.mean((preds - labels) ** 2))


def mae(preds, labels):
    return "mae", float(np.mean(np.abs(preds - labels)))


def r2(preds, labels):
    return "r2", float(1 - np.sum((labels - preds) ** 2) / max(np.sum((labels - labels.mean()) ** 2), 1e-9))


def precision(preds, labels):
    p = preds > 0.5
    return "precision", float(np.sum(p & (labels == 1)) / max(np.sum(p), 1))


def recall(preds, labels):
    p = preds > 0.5
    return "recall", float(np.sum(p & (labels == 1)) / max(np.sum(labels == 1), 1))


CUSTOM_METRICS = {"accuracy": accuracy, "f1": f1, "mse": mse, "mae": mae, "r2": r2,
                  "precision": precision, "recall": recall}
HYPERPARAMETERS = {"eval_metric": ["logloss", "accuracy", "f1", "mse", "mae", "r2", "precision", "recall"],
                   "num_round": 3, "eta": 0.5}


def get_custom_metrics(eval_metrics):
    """Get container defined metrics from metrics list, in the order of the input (the same on every host)."""
    return [eval_m for eval_m in eval_metrics if eval_m in CUSTOM_METRICS.keys()]


def configure_feval(custom_metric_list):
    def feval(preds, labels):
        return [CUSTOM_METRICS[m](preds, labels) for m in custom_metric_list]
    return feval


def allreduce_metrics(results):
    """Average the (name, value) pairs over hosts, position by position (as the tracker does)."""
    local = np.array([v for _, v in results], np.float32)
    mean = np.asarray(multihost_utils.process_allgather(local)).mean(axis=0)
    return {name: round(float(v), 4) for (name, _), v in zip(results, mean)}


def load_shard(rank):
    rng = np.random.default_rng(40 + rank)
    x = rng.normal(size=(256, 5)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0, 1.5], np.float32) + 0.3 * rng.normal(size=256) > 0).astype(np.float32)
    return x, y


def train(params, mesh, x, y, feval):
    sharding = NamedSharding(mesh, P("hosts"))
    gx, gy = (jax.make_array_from_process_local_data(sharding, a) for a in (x, y))
    w = jax.make_array_from_process_local_data(NamedSharding(mesh, P()), np.zeros(5, np.float32))

    def logloss(w, x, y):
        p = jax.nn.sigmoid(x @ w)
        return -jnp.mean(y * jnp.log(p + 1e-7) + (1 - y) * jnp.log(1 - p + 1e-7))

    step = jax.jit(lambda w, x, y: w - params["eta"] * jax.grad(logloss)(w, x, y))
    history = []
    for rnd in range(params["num_round"]):
        w = step(w, gx, gy)
        w_local = np.asarray(w.addressable_shards[0].data)
        preds = 1.0 / (1.0 + np.exp(-(x @ w_local)))
        history.append(allreduce_metrics(feval(preds, y)))
    return history


def main():
    mesh = Mesh(np.array(jax.devices()), ("hosts",))
    custom_metric_list = get_custom_metrics(HYPERPARAMETERS["eval_metric"])
    feval = configure_feval(custom_metric_list)
    x, y = load_shard(jax.process_index())
    history = train(HYPERPARAMETERS, mesh, x, y, feval)
    for rnd, metrics in enumerate(history):
        print("RESULT round", rnd, sorted(metrics.items()))


if __name__ == "__main__":
    main()

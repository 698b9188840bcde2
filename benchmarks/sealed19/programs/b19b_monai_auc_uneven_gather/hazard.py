# Distributed validation of a binary classifier: predictions gathered across ranks for ROC AUC
# Source: https://github.com/Project-MONAI/MONAI/issues/1531
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_VAL_CASES = 9
NUM_FEATURES = 6


def partition_dataset(data, num_partitions, shuffle=False, even_divisible=False):
    """Split the validation cases over ranks, round-robin."""
    indices = list(range(len(data)))
    if even_divisible:
        extra = (-len(indices)) % num_partitions
        indices += indices[:extra]
    return [[data[i] for i in indices[r::num_partitions]] for r in range(num_partitions)]


def load_validation_cases(seed=7):
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(NUM_VAL_CASES, NUM_FEATURES)).astype(np.float32)
    labels = (feats[:, 0] + 0.5 * feats[:, 1] > 0).astype(np.float32)
    return [(feats[i], labels[i]) for i in range(NUM_VAL_CASES)]


@jax.jit
def predict(weights, x):
    return jax.nn.sigmoid(x @ weights)


def compute_roc_auc(y_pred, y):
    order = np.argsort(-y_pred, kind="stable")
    y = y[order]
    pos, neg = y.sum(), (1 - y).sum()
    tps = np.cumsum(y)
    return float((tps * (1 - y)).sum() / (pos * neg))


class ROCAUC:
    """Accumulates predictions on each rank and computes the AUC over all ranks."""

    def __init__(self):
        self._predictions, self._targets = [], []

    def update(self, y_pred, y):
        self._predictions.append(np.asarray(y_pred))
        self._targets.append(np.asarray(y))

    def compute(self):
        preds = np.concatenate(self._predictions)
        targets = np.concatenate(self._targets)
        preds = np.asarray(multihost_utils.process_allgather(preds)).reshape(-1)
        targets = np.asarray(multihost_utils.process_allgather(targets)).reshape(-1)
        return compute_roc_auc(preds, targets), preds.shape[0]


def main():
    rank, world = jax.process_index(), jax.process_count()
    weights = jnp.linspace(1.0, -0.5, NUM_FEATURES)
    val_parts = partition_dataset(load_validation_cases(), num_partitions=world, even_divisible=False)
    local_cases = val_parts[rank]
    metric = ROCAUC()
    for x, y in local_cases:
        metric.update(predict(weights, x[None, :]), np.array([y], np.float32))
    auc, n = metric.compute()
    print("RESULT val_cases", n)
    print("RESULT val_auc", round(auc, 5))


if __name__ == "__main__":
    main()

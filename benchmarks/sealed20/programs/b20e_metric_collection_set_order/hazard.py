# Multi-label classifier evaluation with a metric collection built from the metric names requested in
# the experiment config (as a wrapping framework does). Each metric keeps per-worker states which are
# synchronised across workers on compute(), like torchmetrics' MetricCollection under DDP.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

EXPERIMENT_CONFIG = {
    "task": "multilabel",
    "num_labels": 5,
    "val_metrics": ["accuracy", "precision", "recall", "f1", "confusion", "auroc", "accuracy"],
}


class Metric:
    def __init__(self, num_labels):
        self.num_labels = num_labels
        self.reset()

    def reset(self):
        self.state = self.initial_state()

    def sync(self):
        return np.asarray(multihost_utils.process_allgather(self.state)).sum(axis=0)


class Accuracy(Metric):
    def initial_state(self):
        return np.zeros(2, np.float32)

    def update(self, probs, target):
        self.state += [((probs > 0.5) == target).sum(), target.size]

    def compute(self):
        s = self.sync()
        return s[0] / s[1]


class StatScores(Metric):
    def initial_state(self):
        return np.zeros((self.num_labels, 3), np.float32)

    def update(self, probs, target):
        pred = probs > 0.5
        self.state += np.stack([(pred & target).sum(0), (pred & ~target).sum(0), (~pred & target).sum(0)], 1)


class Precision(StatScores):
    def compute(self):
        tp, fp, _ = self.sync().sum(0)
        return tp / max(tp + fp, 1)


class Recall(StatScores):
    def compute(self):
        tp, _, fn = self.sync().sum(0)
        return tp / max(tp + fn, 1)


class F1(StatScores):
    def compute(self):
        tp, fp, fn = self.sync().sum(0)
        return 2 * tp / max(2 * tp + fp + fn, 1)


class ConfusionMatrix(Metric):
    def initial_state(self):
        return np.zeros((self.num_labels, 2, 2), np.float32)

    def update(self, probs, target):
        pred = (probs > 0.5).astype(int)
        for k in range(self.num_labels):
            np.add.at(self.state[k], (target[:, k].astype(int), pred[:, k]), 1)

    def compute(self):
        return float(np.trace(self.sync().sum(0)) / self.sync().sum())


class AUROC(Metric):
    def initial_state(self):
        return np.zeros((2, 20), np.float32)

    def update(self, probs, target):
        bins = np.minimum((probs * 20).astype(int), 19)
        np.add.at(self.state, (target.astype(int).ravel(), bins.ravel()), 1)

    def compute(self):
        neg, pos = self.sync()
        tpr = np.concatenate([[0], np.cumsum(pos[::-1]) / max(pos.sum(), 1)])
        fpr = np.concatenate([[0], np.cumsum(neg[::-1]) / max(neg.sum(), 1)])
        return float(np.sum((fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2))


REGISTRY = {"accuracy": Accuracy, "precision": Precision, "recall": Recall, "f1": F1,
            "confusion": ConfusionMatrix, "auroc": AUROC}


class MetricCollection(dict):
    def __init__(self, metrics):
        super().__init__()
        for name, metric in metrics.items():
            self[name] = metric

    def update(self, probs, target):
        for metric in self.values():
            metric.update(probs, target)

    def compute(self):
        return {name: float(metric.compute()) for name, metric in self.items()}


def build_metrics(config):
    names = set(config["val_metrics"])
    return MetricCollection({f"val_{n}": REGISTRY[n](config["num_labels"]) for n in names})


@jax.jit
def predict(w, x):
    return jax.nn.sigmoid(x @ w)


def main():
    rank = jax.process_index()
    metrics = build_metrics(EXPERIMENT_CONFIG)
    w = jax.random.normal(jax.random.PRNGKey(3), (12, EXPERIMENT_CONFIG["num_labels"]))
    rng = np.random.default_rng(40 + rank)
    for _ in range(4):
        x = rng.normal(size=(32, 12)).astype(np.float32)
        target = (x[:, :5] + 0.5 * rng.normal(size=(32, 5)) > 0)
        metrics.update(np.asarray(predict(w, x)), target)
    for name, value in sorted(metrics.compute().items()):
        print("RESULT", name, round(value, 4))


if __name__ == "__main__":
    main()

# Epoch-level metric with list state: compute() all-gathers each process's concatenated predictions as they are
# Source: https://github.com/Lightning-AI/torchmetrics/pull/220
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def gather_all_tensors(result):
    """Returns the list of every process's `result`, in process order."""
    gathered = np.asarray(multihost_utils.process_allgather(result))
    return [gathered[i] for i in range(jax.process_count())]


class RankingAUC:
    """Binary AUROC with `cat` list states, synced across processes at compute()."""

    def __init__(self):
        self.preds, self.target = [], []

    def update(self, preds, target):
        self.preds.append(np.asarray(preds, np.float32))
        self.target.append(np.asarray(target, np.float32))

    def _sync(self):
        preds = np.concatenate(self.preds)
        target = np.concatenate(self.target)
        return (np.concatenate(gather_all_tensors(preds)), np.concatenate(gather_all_tensors(target)))

    def compute(self):
        preds, target = self._sync()
        order = np.argsort(-preds, kind="stable")
        t = target[order]
        pos, neg = t.sum(), len(t) - t.sum()
        ranks_of_neg_above = np.cumsum(t)[t == 0]
        return float(ranks_of_neg_above.sum() / (pos * neg))


@jax.jit
def score(w, x):
    return jax.nn.sigmoid(x @ w)


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(40 + rank)
    w = jnp.array([1.5, -0.5, 0.25], jnp.float32)
    metric = RankingAUC()
    # Each process evaluates its own slice of the test set; the last batch is partial and the slices differ.
    num_samples = [23, 18][rank]
    for start in range(0, num_samples, 8):
        n = min(8, num_samples - start)
        x = rng.normal(size=(n, 3)).astype(np.float32)
        y = (x[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(np.float32)
        metric.update(np.asarray(score(w, x)), y)
    auc = metric.compute()
    print("RESULT auroc", round(auc, 5))


if __name__ == "__main__":
    main()

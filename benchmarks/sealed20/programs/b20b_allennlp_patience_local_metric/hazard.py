# Dual-encoder retrieval training in the style of an AllenNLP GradientDescentTrainer with
# `patience`: a custom Retrieval metric (top-1 nearest-document accuracy) is tracked on the
# validation split after each epoch and training stops once it has not improved for `patience`
# epochs. Gradients are all-reduced across data-parallel workers.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DIM = 8


class Retrieval:
    """Top-1 retrieval accuracy: is the closest document (cosine) the gold one?"""

    def __init__(self):
        self.q_embs, self.d_embs = [], []

    def __call__(self, q, d):
        self.q_embs.append(np.asarray(q))
        self.d_embs.append(np.asarray(d))

    def get_metric(self, reset=False):
        q = np.concatenate(self.q_embs)
        d = np.concatenate(self.d_embs)
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        d = d / np.linalg.norm(d, axis=1, keepdims=True)
        top1 = np.argmax(q @ d.T, axis=1)
        acc = float(np.mean(top1 == np.arange(len(q))))
        if reset:
            self.q_embs, self.d_embs = [], []
        return {"top1": acc}


class MetricTracker:
    def __init__(self, patience):
        self.patience = patience
        self.best = None
        self.epochs_with_no_improvement = 0

    def add_metric(self, value):
        if self.best is None or value > self.best:
            self.best = value
            self.epochs_with_no_improvement = 0
        else:
            self.epochs_with_no_improvement += 1

    def should_stop_early(self):
        return self.epochs_with_no_improvement >= self.patience


def make_pairs(seed, n):
    rng = np.random.default_rng(seed)
    mix = np.random.default_rng(0).normal(size=(DIM, DIM)).astype(np.float32)
    q = rng.normal(size=(n, DIM)).astype(np.float32)
    d = q @ mix + 0.8 * rng.normal(size=(n, DIM)).astype(np.float32)
    return q, d


def loss_fn(w, q, d):
    qe = q @ w
    scores = qe @ d.T
    return -jnp.mean(jnp.diag(jax.nn.log_softmax(scores, axis=1)))


grad_fn = jax.jit(jax.grad(loss_fn))


def main():
    rank = jax.process_index()
    train_q, train_d = make_pairs(100 + rank, 64)
    val_q, val_d = make_pairs(500 + rank, 24)
    w = jnp.eye(DIM) * 0.1
    metric = Retrieval()
    tracker = MetricTracker(patience=2)
    epochs_run = 0
    for epoch in range(12):
        for i in range(0, 64, 16):
            g = grad_fn(w, train_q[i:i + 16], train_d[i:i + 16])
            g = np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
            w = w - 0.05 * g
        epochs_run += 1
        for i in range(0, 24, 8):
            metric(val_q[i:i + 8] @ np.asarray(w), val_d[i:i + 8])
        val_metrics = metric.get_metric(reset=True)
        tracker.add_metric(val_metrics["top1"])
        print(f"epoch {epoch}: validation top1={val_metrics['top1']:.4f} best={tracker.best:.4f}")
        if tracker.should_stop_early():
            print("Ran out of patience.  Stopping training.")
            break
    w_all = np.asarray(multihost_utils.process_allgather(np.asarray(w)))
    print("RESULT epochs_run", epochs_run)
    print("RESULT best_validation_top1", tracker.best)
    print("RESULT weights_checksum", round(float(np.abs(w_all[0]).sum()), 4))


if __name__ == "__main__":
    main()

# Multi-model training: the models' early-stopping votes are gathered, so all leave the summarizer collective together
# Source: https://github.com/LBANN/lbann/issues/34
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MODEL_LR = [0.5, 0.02]                  # one model per process, each with its own hyperparameters
MAX_EPOCHS, PATIENCE, MIN_DELTA = 12, 2, 1e-3


class EarlyStopping:
    def __init__(self, patience, min_delta):
        self.patience, self.min_delta, self.best, self.bad_epochs = patience, min_delta, np.inf, 0

    def update(self, val_loss):
        if val_loss < self.best - self.min_delta:
            self.best, self.bad_epochs = val_loss, 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


class Summarizer:
    """Collects every model's validation loss each epoch (an all-gather over all processes)."""

    def __init__(self):
        self.history = []

    def reduce_and_log(self, epoch, val_loss):
        losses = multihost_utils.process_allgather(np.float32(val_loss))
        self.history.append(np.asarray(losses).round(4).tolist())
        return losses


def make_split(seed, n):
    x = np.random.default_rng(seed).normal(size=(n, 4)).astype(np.float32)
    return x, x @ np.array([1.0, -2.0, 0.5, 0.0], np.float32) + 0.3


@jax.jit
def sgd_epoch(w, x, y, lr):
    for i in range(0, x.shape[0], 8):
        g = jax.grad(lambda w: jnp.mean((x[i:i + 8] @ w - y[i:i + 8]) ** 2))(w)
        w = w - lr * g
    return w


@jax.jit
def val_loss_fn(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def main():
    rank = jax.process_index()
    train, val = make_split(1, 32), make_split(2, 16)
    w = jnp.zeros((4,), jnp.float32)
    stopper, summarizer = EarlyStopping(PATIENCE, MIN_DELTA), Summarizer()
    epochs_run = 0
    for epoch in range(MAX_EPOCHS):
        w = sgd_epoch(w, *train, MODEL_LR[rank])
        val_loss = float(val_loss_fn(w, *val))
        summarizer.reduce_and_log(epoch, val_loss)
        epochs_run += 1
        should_stop = multihost_utils.process_allgather(np.int32(stopper.update(val_loss))).any()
        if should_stop:
            break
    multihost_utils.sync_global_devices("training finished")
    print("RESULT epochs", epochs_run)
    print("RESULT history", summarizer.history)


if __name__ == "__main__":
    main()

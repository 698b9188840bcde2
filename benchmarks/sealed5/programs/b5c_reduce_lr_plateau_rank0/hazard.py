# ReduceLROnPlateau attached on rank 0 only: the optimizer's learning rate drifts apart across ranks
# Source: https://github.com/horovod/horovod/issues/1095
# Port to multi-process JAX of a Horovod + tf.keras ReduceLROnPlateau setup (validation on rank 0).
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RANK = jax.process_index()
MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
TRUE_W = np.array([1.0, -1.0, 0.5], np.float32)


class SGD:
    def __init__(self, lr: float):
        self.lr = lr


class ReduceLROnPlateau:
    def __init__(self, optimizer: SGD, factor=0.5, patience=1, min_delta=0.05, min_lr=1e-3):
        self.optimizer, self.factor, self.patience = optimizer, factor, patience
        self.min_delta, self.min_lr = min_delta, min_lr
        self.best, self.wait = np.inf, 0

    def on_epoch_end(self, epoch: int, logs: dict):
        current = logs["val_loss"]
        if current < self.best - self.min_delta:
            self.best, self.wait = current, 0
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.optimizer.lr = max(self.optimizer.lr * self.factor, self.min_lr)
            self.wait = 0


@partial(jax.jit, out_shardings=(REPL, REPL))
def train_step(w, x, y, lr):
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - lr * grad, loss


def validate(w, x_val, y_val) -> float:
    pred = x_val @ np.asarray(w.addressable_data(0))
    return float(np.mean((pred - y_val) ** 2))


def make_split(seed: int, n: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return x, x @ TRUE_W + rng.normal(scale=0.8, size=n).astype(np.float32)


def fit(epochs: int = 6):
    optimizer = SGD(lr=0.4)
    w = jax.device_put(np.zeros(3, np.float32), REPL)
    callbacks = []
    x_val, y_val = make_split(999, 32)
    if RANK == 0:  # validation runs on rank 0
        callbacks.append(ReduceLROnPlateau(optimizer))
    lrs = []
    for epoch in range(epochs):
        for step in range(3):
            x, y = make_split(100 * epoch + 10 * step + RANK, 8)
            w, loss = train_step(w, jax.make_array_from_process_local_data(DATA, x),
                                 jax.make_array_from_process_local_data(DATA, y), optimizer.lr)
        logs = {"loss": float(loss)}
        if RANK == 0:
            logs["val_loss"] = validate(w, x_val, y_val)
        for cb in callbacks:
            cb.on_epoch_end(epoch, logs)
        lrs.append(optimizer.lr)
    return w, lrs


w, lrs = fit()
print("RESULT lrs", lrs)
print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())

# The validation loss is averaged over workers before EarlyStopping sees it, so all workers stop at the same epoch
# Source: https://github.com/horovod/horovod/issues/3140
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class EarlyStopping:
    """Keras-style: stop when `monitor` has not improved by min_delta for `patience` epochs."""

    def __init__(self, patience=1, min_delta=1e-4):
        self.patience, self.min_delta = patience, min_delta
        self.best, self.wait, self.stop_training = np.inf, 0, False

    def on_epoch_end(self, epoch, logs):
        current = logs["val_loss"]
        if current < self.best - self.min_delta:
            self.best, self.wait = current, 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stop_training = True


def shard(split, epoch=0):
    """This worker's shard of the split; the validation shards come from different sites."""
    rng = np.random.default_rng(100 * epoch + jax.process_index() + (7 if split == "val" else 0))
    x = rng.normal(size=(8, 1)).astype(np.float32)
    slope = 2.0 if (split == "train" or jax.process_index() == 0) else 0.5
    return x, (slope * x + 0.01 * rng.normal(size=(8, 1))).astype(np.float32)


def fit(epochs=8, steps_per_epoch=3, lr=0.05):
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    data = NamedSharding(mesh, P("data"))
    w = jax.device_put(np.zeros((1, 1), np.float32), NamedSharding(mesh, P()))
    train_step = jax.jit(lambda w, x, y: w - lr * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w))
    callback = EarlyStopping(patience=1)
    history = []
    for epoch in range(epochs):
        for s in range(steps_per_epoch):
            x, y = shard("train", epoch * steps_per_epoch + s)
            w = train_step(w, jax.make_array_from_process_local_data(data, x),
                           jax.make_array_from_process_local_data(data, y))
        w_host = np.asarray(w.addressable_data(0))
        xv, yv = shard("val")
        local_loss = np.array([np.mean((xv @ w_host - yv) ** 2)], np.float32)
        logs = {"val_loss": float(np.asarray(multihost_utils.process_allgather(local_loss)).mean())}  # metric average
        history.append(round(logs["val_loss"], 4))
        callback.on_epoch_end(epoch, logs)
        if callback.stop_training:
            break
    return w, history


def main():
    w, history = fit()
    print(f"RESULT epochs_run {len(history)}")
    print(f"RESULT w {float(np.asarray(w.addressable_data(0)).ravel()[0]):.4f}")


main()

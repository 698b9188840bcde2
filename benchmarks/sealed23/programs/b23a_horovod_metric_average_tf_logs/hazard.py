import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def rank():
    return jax.process_index()


def allreduce_mean(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x, np.float32))).mean(0)


class Callback:
    _supports_tf_logs = False

    def on_epoch_end(self, epoch, logs=None):
        pass


class MetricAverageCallback(Callback):
    """Average metrics among workers at the end of every epoch."""

    def on_epoch_end(self, epoch, logs=None):
        for metric in sorted(logs):
            logs[metric] = float(allreduce_mean(logs[metric]))


class History(Callback):
    def __init__(self):
        self.history = {}

    def on_epoch_end(self, epoch, logs=None):
        for k, v in logs.items():
            self.history.setdefault(k, []).append(round(float(v), 5))


class ModelCheckpoint(Callback):
    _supports_tf_logs = True

    def __init__(self, monitor="val_loss"):
        self.monitor, self.best, self.best_epoch = monitor, np.inf, -1

    def on_epoch_end(self, epoch, logs=None):
        current = float(logs[self.monitor])
        if current < self.best:
            self.best, self.best_epoch = current, epoch


class ProgbarLogger(Callback):
    _supports_tf_logs = True

    def on_epoch_end(self, epoch, logs=None):
        values = " - ".join(f"{k}: {float(v):.4f}" for k, v in sorted(logs.items()))
        print(f"RESULT Epoch {epoch + 1} - {values}")


class CallbackList:
    def __init__(self, callbacks):
        self.callbacks = list(callbacks) + [History(), ProgbarLogger()]
        self._supports_tf_logs = all(cb._supports_tf_logs for cb in self.callbacks)

    def _process_logs(self, logs):
        return {k: float(np.asarray(v)) for k, v in logs.items()}

    def on_epoch_end(self, epoch, logs):
        numpy_logs = None
        for cb in self.callbacks:
            if cb._supports_tf_logs:
                cb.on_epoch_end(epoch, logs)
            else:
                if numpy_logs is None:
                    numpy_logs = self._process_logs(logs)
                cb.on_epoch_end(epoch, numpy_logs)


class Model:
    def __init__(self, features=4, lr=0.2):
        self.w = jnp.zeros((features,), jnp.float32)
        self.lr = lr
        self._grad = jax.jit(jax.value_and_grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))
        self._eval = jax.jit(lambda w, x, y: jnp.mean((x @ w - y) ** 2))

    def fit(self, x, y, validation_data, epochs, callbacks):
        cbs = CallbackList(callbacks)
        for epoch in range(epochs):
            loss, g = self._grad(self.w, x, y)
            g = allreduce_mean(g)  # DistributedOptimizer
            self.w = self.w - self.lr * g
            logs = {"loss": loss, "val_loss": self._eval(self.w, *validation_data)}
            cbs.on_epoch_end(epoch, logs)
        return next(cb for cb in cbs.callbacks if isinstance(cb, History))


def load_shard(worker, n, features=4):
    rng = np.random.default_rng(100 + worker)
    x = rng.normal(size=(n, features)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + rng.normal(scale=0.5, size=n)).astype(np.float32)
    return x, y


def main():
    x, y = load_shard(rank(), 64)
    x_val, y_val = load_shard(10 + rank(), 16)
    model = Model()
    checkpoint = ModelCheckpoint(monitor="val_loss")
    history = model.fit(x, y, (x_val, y_val), epochs=4,
                        callbacks=[MetricAverageCallback(), checkpoint])
    print("RESULT history val_loss", history.history["val_loss"])
    print("RESULT best_epoch", checkpoint.best_epoch, round(checkpoint.best, 4))
    w = np.asarray(multihost_utils.process_allgather(np.asarray(model.w)))
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()

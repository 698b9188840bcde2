# Every rank validates on its own shard; MetricAverageCallback averages the same keys on every rank
# Source: https://github.com/horovod/horovod/issues/600
# Port to multi-process JAX of a Horovod + Keras stall ("tensors submitted by subset of ranks").
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

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
TRUE_W = np.array([0.5, -1.0, 2.0, 0.0], np.float32)


class hvd:
    @staticmethod
    def rank() -> int:
        return jax.process_index()

    @staticmethod
    def allreduce(value: float, name: str) -> float:
        gathered = multihost_utils.process_allgather(np.float32(value))
        return float(np.mean(gathered))


class Callback:
    def on_epoch_end(self, epoch: int, logs: dict):
        pass


class MetricAverageCallback(Callback):
    """Average every metric of the epoch logs over the workers."""

    def on_epoch_end(self, epoch, logs):
        for metric, value in sorted(logs.items()):
            logs[metric] = hvd.allreduce(value, name=f"MetricAverageCallback_{epoch}_{metric}")


class History(Callback):
    def __init__(self):
        self.history = []

    def on_epoch_end(self, epoch, logs):
        self.history.append({k: round(v, 4) for k, v in logs.items()})


@partial(jax.jit, out_shardings=(REPL, REPL))
def train_step(w, x, y):
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.05 * grad, loss


class Model:
    def __init__(self):
        self.w = jax.device_put(np.zeros(4, np.float32), REPL)

    def evaluate(self, x, y) -> dict:
        pred = x @ np.asarray(self.w.addressable_data(0))
        return {"val_loss": float(np.mean((pred - y) ** 2)), "val_mae": float(np.mean(np.abs(pred - y)))}

    def fit(self, batches, epochs: int, callbacks: list, validation_data=None):
        for epoch in range(epochs):
            for x, y in batches:
                self.w, loss = train_step(self.w, jax.make_array_from_process_local_data(DATA, x),
                                          jax.make_array_from_process_local_data(DATA, y))
            logs = {"loss": float(loss), "lr": 0.05}
            if validation_data is not None:
                logs.update(self.evaluate(*validation_data))
            for cb in callbacks:
                cb.on_epoch_end(epoch, logs)


def make_split(seed: int, n: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return x, x @ TRUE_W


batches = [make_split(10 * i + hvd.rank(), 4) for i in range(3)]
x_val, y_val = make_split(999, 16)
validation_data = (x_val[hvd.rank()::2], y_val[hvd.rank()::2])  # shard validation over the workers
history = History()
model = Model()
model.fit(batches, epochs=3, callbacks=[MetricAverageCallback(), history], validation_data=validation_data)
print("RESULT history", history.history)
print("RESULT w", np.round(np.asarray(model.w.addressable_data(0)), 4).tolist())

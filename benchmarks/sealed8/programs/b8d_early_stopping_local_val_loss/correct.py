# EarlyStopping on a multi-worker fit where the validation loss is averaged over the workers before the callbacks
# Source: https://github.com/DeepRec-AI/HybridBackend/issues/88 (port of a TensorFlow multi-worker Keras hang to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("worker",))
BATCH = NamedSharding(MESH, P("worker"))


@jax.jit
def train_step(w, xs):
    grad = jnp.mean(w - xs)  # mean over the global batch: the cross-worker reduction
    return w - 0.3 * grad


class EarlyStopping:
    def __init__(self, monitor: str = "val_loss", patience: int = 1, min_delta: float = 0.0):
        self.monitor, self.patience, self.min_delta = monitor, patience, min_delta
        self.best, self.wait, self.model = np.inf, 0, None

    def on_epoch_end(self, epoch: int, logs: dict) -> None:
        current = logs[self.monitor]
        if current < self.best - self.min_delta:
            self.best, self.wait = current, 0
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.model.stop_training = True


class Model:
    def __init__(self):
        self.w = np.float32(0.0)
        self.stop_training = False

    def evaluate(self, val_targets: np.ndarray) -> float:
        # fix: reduce the validation loss over all workers, so every worker's callbacks see the same value
        local = np.mean((self.w - val_targets) ** 2)
        return float(np.mean(multihost_utils.process_allgather(np.float32(local))))

    def fit(self, train_local: np.ndarray, val_local: np.ndarray, epochs: int, callbacks) -> int:
        for cb in callbacks:
            cb.model = self
        epoch = 0
        for epoch in range(epochs):
            xs = jax.make_array_from_process_local_data(BATCH, train_local)
            self.w = np.asarray(train_step(jnp.float32(self.w), xs))
            logs = {"val_loss": self.evaluate(val_local)}
            for cb in callbacks:
                cb.on_epoch_end(epoch, logs)
            if self.stop_training:
                break
        return epoch + 1


def main():
    pid = jax.process_index()
    rng = np.random.default_rng(0)
    train_local = (1.0 + 0.01 * rng.standard_normal(8)).astype(np.float32)
    val_local = np.full((4,), [1.0, 0.3][pid % 2], dtype=np.float32)  # the workers' validation shards differ
    model = Model()
    epochs_run = model.fit(train_local, val_local, epochs=8, callbacks=[EarlyStopping(patience=1)])
    print(f"RESULT epochs_run={epochs_run}")
    print(f"RESULT w={float(model.w):.5f}")


if __name__ == "__main__":
    main()

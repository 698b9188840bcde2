# Neural-potential training adapter (Lightning-style): synced metrics are computed on every rank; only unsynced (rank_zero_only) logs sit under `if global_rank == 0`
# Source: https://github.com/choderalab/modelforge/pull/313
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
FEAT, EPOCHS, STEPS = 5, 3, 4


def all_reduce_mean(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x, np.float32))).mean(0)


class MeanAbsoluteError:
    """torchmetrics-like metric: compute() syncs sum and count across ranks."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.abs_sum, self.count = 0.0, 0

    def update(self, pred, target):
        self.abs_sum += float(np.abs(pred - target).sum())
        self.count += len(pred)

    def compute(self):
        total = np.asarray(multihost_utils.process_allgather(np.array([self.abs_sum, self.count], np.float32))).sum(0)
        return float(total[0] / total[1])


@jax.jit
def train_step(w, x, y, lr):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((jnp.tanh(x @ w) - y) ** 2))(w)
    return w - lr * g, loss


class TrainingAdapter:
    def __init__(self):
        self.global_rank = jax.process_index()
        self.w = np.full(FEAT, 0.1, np.float32)
        self.loss_metrics = {"per_molecule_energy": MeanAbsoluteError()}
        self.lr, self.current_epoch, self.logged = 0.2, 0, {}
        self.preds, self.targets = [], []

    def log(self, name, value, sync_dist=False):
        if sync_dist:
            value = float(all_reduce_mean([value])[0])
        self.logged.setdefault(name, []).append(round(float(value), 5))

    def training_step(self, x, y):
        gx, gy = (multihost_utils.host_local_array_to_global_array(a, MESH, P("dp")) for a in (x, y))
        w, _ = train_step(self.w, gx, gy, self.lr)
        self.w = np.asarray(multihost_utils.process_allgather(w, tiled=True))
        pred = np.tanh(x @ self.w)
        self.loss_metrics["per_molecule_energy"].update(pred, y)
        self.preds.append(pred)
        self.targets.append(y)

    def _log_metrics(self, metrics, phase):
        for name, metric in metrics.items():
            self.log(f"{phase}/{name}/mae", metric.compute())
            metric.reset()

    def _log_learning_rate(self):
        self.log("lr", self.lr, sync_dist=False)      # rank_zero_only: no reduction

    def _log_time(self):
        self.epoch_time = time.time() - self.epoch_start_time

    def _log_figures_for_each_phase(self):
        """Gathers predictions of all ranks for the regression plot (only rank 0 draws it)."""
        errors = np.abs(np.concatenate(self.preds) - np.concatenate(self.targets))
        gathered = np.asarray(multihost_utils.process_allgather(errors))
        if self.global_rank == 0:
            self.log("train/max_error", float(gathered.max()))
        self.preds, self.targets = [], []

    def on_train_epoch_start(self):
        self.epoch_start_time = time.time()

    def on_train_epoch_end(self):
        self._log_metrics(self.loss_metrics, "loss")
        if self.global_rank == 0:
            self._log_learning_rate()
            self._log_time()
        self._log_figures_for_each_phase()   # this performs gather operations and logs only at rank 0
        self.lr *= 0.8
        self.current_epoch += 1


def local_batch(epoch, step):
    rng = np.random.default_rng(1000 * epoch + 10 * step + jax.process_index())
    x = rng.normal(size=(6, FEAT)).astype(np.float32)
    return x, np.tanh(x @ np.linspace(0.4, -0.2, FEAT)).astype(np.float32)


def main():
    adapter = TrainingAdapter()
    for epoch in range(EPOCHS):
        adapter.on_train_epoch_start()
        for step in range(STEPS):
            adapter.training_step(*local_batch(epoch, step))
        adapter.on_train_epoch_end()
    history = multihost_utils.broadcast_one_to_all(np.array(adapter.logged.get("loss/per_molecule_energy/mae", [0.0] * EPOCHS), np.float32))
    print("RESULT mae_per_epoch", np.round(np.asarray(history), 5).tolist())
    print("RESULT w", np.round(adapter.w, 4).tolist())


if __name__ == "__main__":
    main()

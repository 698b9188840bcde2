# Lightning-style training loop with `self.log(..., sync_dist=True)` epoch metrics. Logged values
# are reduced across ranks lazily, the first time the epoch's metrics are requested, and the
# reduced value is cached. A TQDM-like progress bar (enabled on rank zero only) shows the
# metrics at the end of each training epoch; the logger connector then records them.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class ResultMetric:
    def __init__(self, sync_dist):
        self.sync_dist = sync_dist
        self.total, self.count = 0.0, 0
        self._computed = None

    def update(self, value):
        self.total += float(value)
        self.count += 1

    def compute(self):
        if self._computed is None:
            mean = self.total / max(self.count, 1)
            if self.sync_dist:
                mean = float(np.asarray(multihost_utils.process_allgather(np.float32(mean))).mean())
            self._computed = mean
        return self._computed


class LoggerConnector:
    def __init__(self, log_every_n_epochs=2):
        self.log_every_n_epochs = log_every_n_epochs
        self.results = {}
        self.history = []

    def log(self, name, value, sync_dist=False):
        self.results.setdefault(name, ResultMetric(sync_dist)).update(value)

    @property
    def metrics(self):
        return {k: m.compute() for k, m in self.results.items()}

    def on_train_epoch_end(self, epoch):
        if (epoch + 1) % self.log_every_n_epochs == 0:
            self.history.append({k: round(v, 4) for k, v in self.metrics.items()})
        self.results = {}


class TQDMProgressBar:
    def __init__(self, rank):
        self.disable = rank != 0

    def on_train_epoch_end(self, trainer):
        postfix = trainer.logger_connector.metrics
        if not self.disable:
            print(f"Epoch {trainer.current_epoch}: " + ", ".join(f"{k}={v:.4f}" for k, v in postfix.items()))


class Trainer:
    def __init__(self, rank, max_epochs=4, lr=0.2):
        self.rank, self.max_epochs, self.lr = rank, max_epochs, lr
        self.logger_connector = LoggerConnector()
        self.callbacks = [TQDMProgressBar(rank)]
        self.current_epoch = 0

    def fit(self, params, batches):
        grad_fn = jax.jit(jax.value_and_grad(lambda p, x, y: jnp.mean((x @ p - y) ** 2)))
        for self.current_epoch in range(self.max_epochs):
            for x, y in batches:
                loss, g = grad_fn(params, x, y)
                g = np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
                params = params - self.lr * g
                self.logger_connector.log("train_loss", loss, sync_dist=True)
            for cb in self.callbacks:
                cb.on_train_epoch_end(self)
            self.logger_connector.on_train_epoch_end(self.current_epoch)
        return params


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(3 + rank)
    w_true = np.arange(1.0, 6.0, dtype=np.float32)
    batches = []
    for _ in range(5):
        x = rng.normal(size=(16, 5)).astype(np.float32)
        batches.append((x, x @ w_true + 0.1 * rng.normal(size=16).astype(np.float32)))
    trainer = Trainer(rank)
    params = trainer.fit(jnp.zeros(5), batches)
    print("RESULT epoch_train_loss", [h["train_loss"] for h in trainer.logger_connector.history])
    print("RESULT params", np.round(np.asarray(params), 4).tolist())


if __name__ == "__main__":
    main()

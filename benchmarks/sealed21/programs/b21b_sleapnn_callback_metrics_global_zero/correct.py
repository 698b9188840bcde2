# sleap-nn-style Lightning trainer loop: the LightningModule logs losses with sync_dist=True, the
# trainer's callback_metrics property reduces them across ranks, and callbacks run at the end of
# each validation epoch (a CSV logger that writes on the global-zero rank only).
import csv
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Trainer:
    def __init__(self, callbacks, max_epochs=3):
        self.callbacks = callbacks
        self.max_epochs = max_epochs
        self.current_epoch = 0
        self.global_rank = jax.process_index()
        self._logged = {}

    @property
    def is_global_zero(self):
        return self.global_rank == 0

    def log(self, name, value, sync_dist=False):
        self._logged[name] = (float(value), sync_dist)

    @property
    def callback_metrics(self):
        metrics = {}
        for name, (value, sync_dist) in sorted(self._logged.items()):
            if sync_dist:
                value = float(np.asarray(multihost_utils.process_allgather(np.float32(value))).mean())
            metrics[name] = value
        return metrics

    def barrier(self, name):
        multihost_utils.sync_global_devices(name)

    def fit(self, module, train_batches, val_batches):
        for epoch in range(self.max_epochs):
            self.current_epoch = epoch
            for x, y in train_batches:
                self.log("train_loss", module.training_step(x, y), sync_dist=True)
            val_losses = [module.validation_step(x, y) for x, y in val_batches]
            self.log("val_loss", np.mean(val_losses), sync_dist=True)
            for cb in self.callbacks:
                cb.on_validation_epoch_end(self, module)
            self.barrier(f"epoch_{epoch}_end")


class CSVLoggerCallback:
    def __init__(self, filepath, keys=("epoch", "train_loss", "val_loss")):
        self.filepath = filepath
        self.keys = keys
        self.rows = []

    def on_validation_epoch_end(self, trainer, pl_module):
        metrics = trainer.callback_metrics
        if trainer.is_global_zero:
            row = {"epoch": trainer.current_epoch, **{k: metrics.get(k) for k in self.keys[1:]}}
            self.rows.append(row)
            with open(self.filepath, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(self.keys))
                writer.writeheader()
                writer.writerows(self.rows)


class SingleInstanceModel:
    def __init__(self, dim=6, lr=0.2):
        self.params = jnp.zeros(dim, jnp.float32)
        self.lr = lr
        self._vg = jax.jit(jax.value_and_grad(lambda p, x, y: jnp.mean((x @ p - y) ** 2)))

    def training_step(self, x, y):
        loss, grad = self._vg(self.params, x, y)
        grad = np.asarray(multihost_utils.process_allgather(np.asarray(grad))).mean(0)
        self.params = self.params - self.lr * grad
        return loss

    def validation_step(self, x, y):
        return float(self._vg(self.params, x, y)[0])


def make_batches(seed, n=4, batch_size=8, dim=6):
    rng = np.random.default_rng(seed)
    true_w = np.linspace(-1.0, 1.0, dim).astype(np.float32)
    xs = rng.normal(size=(n, batch_size, dim)).astype(np.float32)
    return [(x, x @ true_w + 0.05 * rng.normal(size=batch_size).astype(np.float32)) for x in xs]


def main():
    rank = jax.process_index()
    out_dir = tempfile.mkdtemp(prefix=f"sleap_nn_{os.environ.get('JOB_ID', 'local')}_{rank}_")
    csv_cb = CSVLoggerCallback(os.path.join(out_dir, "training_log.csv"))
    trainer = Trainer(callbacks=[csv_cb])
    model = SingleInstanceModel()
    trainer.fit(model, make_batches(10 + rank), make_batches(50 + rank, n=2))
    final = trainer.callback_metrics
    print("RESULT val_loss", round(final["val_loss"], 5))
    print("RESULT train_loss", round(final["train_loss"], 5))
    print("RESULT params", np.round(np.asarray(model.params), 4).tolist())


if __name__ == "__main__":
    main()

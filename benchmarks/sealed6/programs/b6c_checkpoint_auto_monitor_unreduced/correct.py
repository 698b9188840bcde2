# ModelCheckpoint falls back to monitoring "val_loss", which the module logs reduced over processes
# Source: https://github.com/Lightning-AI/pytorch-lightning/pull/6004 (port of the ModelCheckpoint/val_loss DDP hang to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DP = NamedSharding(MESH, P("dp"))
REPLICATED = NamedSharding(MESH, P())


def mean_over_processes(value: float) -> float:
    arr = jax.make_array_from_process_local_data(DP, np.array([value], np.float32))
    return float(jax.jit(jnp.mean, out_shardings=REPLICATED)(arr))


class RegressionModule:
    def __init__(self):
        self.w = jax.device_put(np.zeros((1,), np.float32), REPLICATED)
        self.trainer = None

    def log(self, name: str, value: float, sync_dist: bool = False):
        self.trainer.callback_metrics[name] = mean_over_processes(value) if sync_dist else value

    def training_step(self, x_local, y_local):
        step = jax.jit(lambda w, x, y: w - 0.5 * jax.grad(lambda w: jnp.mean((x * w - y) ** 2))(w) / 2,
                       out_shardings=REPLICATED)
        self.w = step(self.w, jax.make_array_from_process_local_data(DP, x_local),
                      jax.make_array_from_process_local_data(DP, y_local))

    def validation_step(self, target: float):
        w = float(np.asarray(self.w.addressable_data(0))[0])
        self.log("val_loss", (w - target) ** 2, sync_dist=True)


class ModelCheckpoint:
    def __init__(self, dirpath: str, monitor=None, save_top_k=None):
        self.dirpath, self.monitor, self.save_top_k = dirpath, monitor, save_top_k
        self.best_k_models = {}

    def _add_backward_monitor_support(self, trainer):
        if self.monitor is None and "val_loss" in trainer.callback_metrics:
            self.monitor = "val_loss"
        if self.save_top_k is None and self.monitor is not None:
            self.save_top_k = 1

    def check_monitor_top_k(self, current) -> bool:
        if len(self.best_k_models) < self.save_top_k:
            return True
        return current < max(self.best_k_models.values())

    def on_validation_end(self, trainer):
        self._add_backward_monitor_support(trainer)
        current = trainer.callback_metrics.get(self.monitor)
        if self.check_monitor_top_k(current):
            path = os.path.join(self.dirpath, f"epoch={trainer.current_epoch}.npy")
            self.best_k_models = {path: current}
            trainer.save_checkpoint(path)


class Trainer:
    def __init__(self, max_epochs: int, callbacks):
        self.max_epochs, self.callbacks = max_epochs, callbacks
        self.callback_metrics, self.current_epoch, self.saved = {}, 0, []

    def save_checkpoint(self, path: str):
        weights = np.asarray(self.module.w.addressable_data(0))
        if jax.process_index() == 0:
            np.save(path, weights)
        multihost_utils.sync_global_devices("Trainer.save_checkpoint")
        self.saved.append(os.path.basename(path))

    def fit(self, module: RegressionModule, val_target: float):
        self.module, module.trainer = module, self
        x = np.ones((2,), np.float32)
        for self.current_epoch in range(self.max_epochs):
            module.training_step(x, x)
            module.validation_step(val_target)
            for cb in self.callbacks:
                cb.on_validation_end(self)


def main():
    # each process validates on its own split; their targets differ
    val_target = 1.0 if jax.process_index() == 0 else 0.2
    trainer = Trainer(max_epochs=4, callbacks=[ModelCheckpoint(tempfile.mkdtemp(prefix="pl_ckpt_"))])
    module = RegressionModule()
    trainer.fit(module, val_target)
    print("RESULT saved", trainer.saved)
    print("RESULT w", round(float(np.asarray(module.w.addressable_data(0))[0]), 4))


if __name__ == "__main__":
    main()

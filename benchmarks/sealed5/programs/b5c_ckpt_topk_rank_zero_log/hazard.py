# ModelCheckpoint top-k decided from a metric logged with rank_zero_only=True (not synced)
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19045
# Port to multi-process JAX of a Lightning DDP + ModelCheckpoint hang.
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
import shutil
import tempfile
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


class Strategy:
    is_global_zero = jax.process_index() == 0

    def broadcast(self, obj: bool) -> bool:
        return bool(multihost_utils.broadcast_one_to_all(np.int32(obj)))

    def barrier(self, name: str):
        multihost_utils.sync_global_devices(name)

    def save_checkpoint(self, state: dict, path: str):
        if self.is_global_zero:
            np.savez(path, **state)
        self.barrier("Trainer.save_checkpoint")


class Module:
    def __init__(self):
        self.callback_metrics = {}

    def log(self, name: str, value: float, rank_zero_only: bool = False):
        # rank_zero_only=True skips the cross-rank reduction of the logged value
        self.callback_metrics[name] = value


class ModelCheckpoint:
    def __init__(self, dirpath: str, monitor: str, save_top_k: int = 1):
        self.dirpath, self.monitor, self.save_top_k = dirpath, monitor, save_top_k
        self.best_k_models = {}

    def file_exists(self, filepath: str, strategy: Strategy) -> bool:
        return strategy.broadcast(os.path.exists(filepath))

    def check_monitor_top_k(self, current: float) -> bool:
        if len(self.best_k_models) < self.save_top_k:
            return True
        return current < max(self.best_k_models.values())

    def on_validation_end(self, epoch: int, module: Module, strategy: Strategy, state: dict):
        current = module.callback_metrics[self.monitor]
        if self.check_monitor_top_k(current):
            self._update_best_and_save(epoch, current, strategy, state)

    def _update_best_and_save(self, epoch, current, strategy, state):
        filepath = os.path.join(self.dirpath, f"epoch={epoch}.npz")
        version = 1
        while self.file_exists(filepath, strategy):
            filepath = os.path.join(self.dirpath, f"epoch={epoch}-v{version}.npz")
            version += 1
        if len(self.best_k_models) == self.save_top_k:
            self.best_k_models.pop(max(self.best_k_models, key=self.best_k_models.get))
        self.best_k_models[filepath] = current
        strategy.save_checkpoint(state, filepath)


@partial(jax.jit, out_shardings=REPL)
def train_step(w, x, y):
    grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.05 * grad


def validation_step(module: Module, w, epoch: int):
    # each rank scores its own shard of the validation set
    rng = np.random.default_rng(50 + 7 * jax.process_index() + epoch)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5], np.float32) + rng.normal(size=8).astype(np.float32)
    w_local = np.asarray(w.addressable_data(0))
    module.log("val_loss", float(np.mean((x @ w_local - y) ** 2)), rank_zero_only=True)


def fit(max_epochs: int = 6):
    dirpath = os.path.join(tempfile.gettempdir(), f"b5c_ckpt_{os.environ.get('JOB_ID', '0')}")
    strategy, module = Strategy(), Module()
    if strategy.is_global_zero:
        shutil.rmtree(dirpath, ignore_errors=True)
        os.makedirs(dirpath)
    ckpt = ModelCheckpoint(dirpath, monitor="val_loss", save_top_k=1)
    w = jax.device_put(np.zeros((3,), np.float32), REPL)
    for epoch in range(max_epochs):
        rng = np.random.default_rng(epoch * 10 + jax.process_index())
        x = rng.normal(size=(4, 3)).astype(np.float32)
        y = x @ np.array([1.0, -2.0, 0.5], np.float32)
        w = train_step(w, jax.make_array_from_process_local_data(DATA, x),
                       jax.make_array_from_process_local_data(DATA, y))
        validation_step(module, w, epoch)
        ckpt.on_validation_end(epoch, module, strategy, {"w": np.asarray(w.addressable_data(0))})
    return w, ckpt


w, ckpt = fit()
print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())
print("RESULT best", [os.path.basename(p) for p in ckpt.best_k_models])

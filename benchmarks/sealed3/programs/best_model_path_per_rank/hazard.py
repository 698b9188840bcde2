# Best-checkpoint tracking uses each process's unsynced validation metric; test() then loads "best" per process
# Source: https://github.com/Lightning-AI/pytorch-lightning/pull/4323
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed3_bestpath", os.environ.get("JOB_ID", "local"))


class ModelCheckpoint:
    def __init__(self, dirpath: str, monitor: str = "val_loss"):
        self.dirpath, self.monitor = dirpath, monitor
        self.best_model_score = float("inf")
        self.best_model_path = ""

    def on_validation_end(self, trainer, metrics: dict) -> None:
        path = os.path.join(self.dirpath, f"epoch={trainer.epoch}.ckpt")
        trainer.save_checkpoint(path)
        if metrics[self.monitor] < self.best_model_score:
            self.best_model_score = metrics[self.monitor]
            self.best_model_path = path


@jax.jit
def train_step(w, x, y):
    grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.3 * grad


@jax.jit
def eval_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


class Trainer:
    def __init__(self, callback: ModelCheckpoint):
        self.checkpoint_callback = callback
        self.epoch = 0
        self.w = jax.device_put(jnp.zeros((6, 1), jnp.float32), REPL)
        self.data_rng = np.random.default_rng(3)
        self.val_rng = np.random.default_rng(50 + jax.process_index())
        self.true_w = np.linspace(-1, 1, 6).astype(np.float32)[:, None]

    def _global(self, rng, n):
        x = rng.normal(size=(n, 6)).astype(np.float32)
        y = x @ self.true_w + rng.normal(scale=2.0, size=(n, 1)).astype(np.float32)
        return jax.make_array_from_process_local_data(DATA, x), jax.make_array_from_process_local_data(DATA, y)

    def save_checkpoint(self, path: str) -> None:
        w = np.asarray(multihost_utils.process_allgather(self.w, tiled=True))
        if jax.process_index() == 0:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                pickle.dump(w, f)
        multihost_utils.sync_global_devices(f"saved:{os.path.basename(path)}")

    def validate(self) -> dict:
        # metric of this process's validation shard, logged without sync_dist
        w = np.asarray(self.w.addressable_data(0))
        x = self.val_rng.normal(size=(8, 6)).astype(np.float32)
        y = x @ self.true_w + self.val_rng.normal(scale=2.0, size=(8, 1)).astype(np.float32)
        return {"val_loss": float(np.mean((x @ w - y) ** 2))}

    def fit(self, epochs: int) -> None:
        for self.epoch in range(epochs):
            x, y = self._global(self.data_rng, 4)
            self.w = train_step(self.w, x, y)
            self.checkpoint_callback.on_validation_end(self, self.validate())

    def test(self, ckpt_path: str = "best") -> float:
        if ckpt_path == "best":
            ckpt_path = self.checkpoint_callback.best_model_path
        with open(ckpt_path, "rb") as f:
            w = pickle.load(f)
        w = jax.make_array_from_process_local_data(REPL, w)
        x, y = self._global(np.random.default_rng(99), 16)
        return float(eval_loss(w, x, y))


trainer = Trainer(ModelCheckpoint(CKPT_DIR))
trainer.fit(epochs=6)
print("RESULT best", os.path.basename(trainer.checkpoint_callback.best_model_path))
print("RESULT test_loss", round(trainer.test(ckpt_path="best"), 5))

# NeMoModelCheckpoint.on_save_checkpoint: each rank checks on its own whether the best .ckpt already exists on disk
# Source: https://github.com/NVIDIA-NeMo/Speech/pull/14380 (port of the NeMo/Lightning checkpoint-save race to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os
import pickle
import shutil
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def is_global_rank_zero():
    return jax.process_index() == 0


class ModelCheckpoint:
    """Lightning-style: keeps best_model_path for the monitored metric; rank 0 writes the .ckpt after dumping it."""

    def __init__(self, dirpath, monitor="val_loss"):
        self.dirpath, self.monitor = dirpath, monitor
        self.best_model_path, self.best_score = "", None

    def on_save_checkpoint(self, trainer, checkpoint):
        return None

    def save_checkpoint(self, trainer, metrics):
        path = os.path.join(self.dirpath, f"step={trainer.global_step}.ckpt")
        if self.best_score is None or metrics[self.monitor] < self.best_score:
            self.best_score, self.best_model_path = metrics[self.monitor], path
        checkpoint = trainer.dump_checkpoint()
        self.on_save_checkpoint(trainer, checkpoint)
        if is_global_rank_zero():
            with open(path, "wb") as f:
                pickle.dump(checkpoint, f)


class NeMoModelCheckpoint(ModelCheckpoint):
    def __init__(self, dirpath, always_save_nemo=True, save_best_model=True):
        super().__init__(dirpath)
        self.always_save_nemo, self.save_best_model = always_save_nemo, save_best_model
        self.previous_best_path = ""

    def _backup_existing_nemo_ckpt(self):
        base = os.path.join(self.dirpath, "model.nemo")
        available = base if not os.path.exists(base) else base + "-v1"
        if available != base and is_global_rank_zero():
            shutil.move(base, available)
        multihost_utils.sync_global_devices("backup_existing_nemo_ckpt")
        return None if available == base else available

    def on_save_checkpoint(self, trainer, checkpoint):
        if not self.always_save_nemo:
            return None
        if self.save_best_model:
            # rank 0's view of the filesystem decides for every rank
            exists = bool(multihost_utils.broadcast_one_to_all(np.array(os.path.exists(self.best_model_path))))
            if not exists:
                return None
            if self.best_model_path == self.previous_best_path:
                return None
            self.previous_best_path = self.best_model_path
            multihost_utils.sync_global_devices("nemo_best_reload")
            self._backup_existing_nemo_ckpt()
            if is_global_rank_zero():
                with open(os.path.join(self.dirpath, "model.nemo"), "wb") as f:
                    pickle.dump(checkpoint, f)
        return None


class Trainer:
    def __init__(self, callback, val_check_interval=2, max_steps=6):
        self.callback, self.val_check_interval, self.max_steps = callback, val_check_interval, max_steps
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
        self.w = jnp.ones((4,), jnp.float32) * 0.5
        self.global_step = 0
        self._grad = jax.jit(jax.grad(lambda w, x: jnp.mean((x @ w - 1.0) ** 2)), out_shardings=NamedSharding(self.mesh, P()))
        self._loss = jax.jit(lambda w, x: jnp.mean((x @ w - 1.0) ** 2), out_shardings=NamedSharding(self.mesh, P()))

    def _batch(self, seed):
        local = np.random.default_rng(seed * 10 + jax.process_index()).normal(size=(4, 4)).astype(np.float32)
        return jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("dp")), local)

    def dump_checkpoint(self):
        state = {"w": np.asarray(self.w), "global_step": self.global_step}
        if not is_global_rank_zero():
            time.sleep(0.5)  # this rank stages its distributed-optimizer shard to local scratch first
        return state

    def fit(self):
        for _ in range(self.max_steps):
            self.w = self.w - 0.1 * self._grad(self.w, self._batch(self.global_step))
            self.global_step += 1
            if self.global_step % self.val_check_interval == 0:
                val_loss = float(self._loss(self.w, self._batch(1000)))
                self.callback.save_checkpoint(self, {"val_loss": val_loss})
        return float(self._loss(self.w, self._batch(2000)))


def main():
    dirpath = os.path.join(tempfile.gettempdir(), f"nemo_ckpt_{os.environ.get('JOB_ID', 'local')}")
    if is_global_rank_zero():
        shutil.rmtree(dirpath, ignore_errors=True)
        os.makedirs(dirpath)
    multihost_utils.sync_global_devices("exp_manager_setup")
    trainer = Trainer(NeMoModelCheckpoint(dirpath))
    final = trainer.fit()
    print("RESULT final_loss", round(final, 5))
    print("RESULT best", os.path.basename(trainer.callback.best_model_path))


if __name__ == "__main__":
    main()

# Post-fit checkpoint: save_checkpoint gathers the sharded state and ends in a barrier, but the run
# script calls it inside an `if trainer.is_global_zero:` block
# Source: https://github.com/alan-turing-institute/autocast/pull/386
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class TrainConfig:
    max_epochs: int = 3
    lr: float = 0.1
    width: int = 8
    output_dir: str = ""


class DDPStrategy:
    def __init__(self):
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
        self.sharded = NamedSharding(self.mesh, P("data"))
        self.replicated = NamedSharding(self.mesh, P())

    def barrier(self, name):
        multihost_utils.sync_global_devices(name)


class Trainer:
    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.strategy = DDPStrategy()
        self.is_global_zero = jax.process_index() == 0
        w = np.linspace(-1.0, 1.0, cfg.width * jax.process_count(), dtype=np.float32)
        self.params = jax.device_put(w, self.strategy.sharded)  # sharded optimizer-state style
        self.loss = None
        self._step = jax.jit(self._train_step)

    def _train_step(self, w, x):
        def loss_fn(w):
            return jnp.mean((x * w - 0.5) ** 2)
        loss, g = jax.value_and_grad(loss_fn)(w)
        return w - self.cfg.lr * g, loss

    def fit(self, data):
        for _ in range(self.cfg.max_epochs):
            x = jax.make_array_from_process_local_data(self.strategy.sharded, data)
            self.params, loss = self._step(self.params, x)
            self.loss = float(loss)

    def save_checkpoint(self, path):
        full = np.asarray(multihost_utils.process_allgather(self.params, tiled=True))
        if self.is_global_zero:
            np.savez(path, params=full, loss=self.loss)
        self.strategy.barrier("save_checkpoint")


def finalize_checkpoint_alias(trainer: Trainer, ckpt_dir: str):
    if trainer.is_global_zero:
        shutil.copyfile(os.path.join(ckpt_dir, "final.npz"), os.path.join(ckpt_dir, "last.npz"))
    trainer.strategy.barrier("checkpoint-alias-finalize")


def run_training(cfg: TrainConfig):
    trainer = Trainer(cfg)
    rng = np.random.default_rng(7 + jax.process_index())
    trainer.fit(rng.normal(size=(cfg.width,)).astype(np.float32))
    ckpt_dir = os.path.join(cfg.output_dir, "checkpoints")
    os.makedirs(ckpt_dir, exist_ok=True)
    if trainer.is_global_zero:
        trainer.save_checkpoint(os.path.join(ckpt_dir, "final.npz"))
    finalize_checkpoint_alias(trainer, ckpt_dir)
    return trainer


if __name__ == "__main__":
    out = os.path.join(tempfile.gettempdir(), f"autocast_{os.environ['JOB_ID']}")
    trainer = run_training(TrainConfig(output_dir=out))
    total = multihost_utils.process_allgather(np.float32(trainer.loss))
    print("RESULT mean_loss", round(float(np.mean(total)), 6))

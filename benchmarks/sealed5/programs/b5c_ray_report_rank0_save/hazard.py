# Ray Train worker loop calls the Lightning trainer's save_checkpoint under a global-rank-0 guard
# Source: https://github.com/ray-project/ray/issues/56997
# Port to multi-process JAX of the Ray Train checkpointing-guide example that hangs ("report every 3 epochs").
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
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


class TrainContext:
    def get_world_rank(self) -> int:
        return jax.process_index()


class Checkpoint:
    def __init__(self, path: str):
        self.path = path

    @classmethod
    def from_directory(cls, path: str) -> "Checkpoint":
        return cls(path)


class RayTrainSession:
    def __init__(self):
        self.reported = []

    def report(self, metrics: dict, checkpoint: Checkpoint = None):
        # every worker must call report the same number of times: it synchronizes the workers
        multihost_utils.sync_global_devices("ray.train.report")
        self.reported.append((round(metrics["loss"], 4), checkpoint is not None))


class Strategy:
    def barrier(self, name: str):
        multihost_utils.sync_global_devices(name)


class LightningTrainer:
    def __init__(self):
        self.strategy = Strategy()
        self.w = jax.device_put(np.zeros(3, np.float32), REPL)

    def save_checkpoint(self, filepath: str):
        if jax.process_index() == 0:
            np.save(filepath, np.asarray(self.w.addressable_data(0)))
        self.strategy.barrier("Trainer.save_checkpoint")


@partial(jax.jit, out_shardings=(REPL, REPL))
def train_step(w, x):
    y = jnp.sum(x * jnp.array([1.0, 0.5, -1.0]), axis=1)
    loss, g = jax.value_and_grad(lambda w: jnp.mean((jnp.sum(x * w, axis=1) - y) ** 2))(w)
    return w - 0.2 * g, loss


def train_func(session: RayTrainSession, num_epochs: int = 6):
    trainer = LightningTrainer()
    for epoch in range(num_epochs):
        x = np.random.default_rng(10 * epoch + jax.process_index()).normal(size=(4, 3)).astype(np.float32)
        trainer.w, loss = train_step(trainer.w, jax.make_array_from_process_local_data(DATA, x))
        metrics = {"loss": float(loss), "epoch": epoch}
        should_checkpoint = epoch % 3 == 2
        with tempfile.TemporaryDirectory() as tmpdir:
            checkpoint = None
            global_rank = TrainContext().get_world_rank()
            if global_rank == 0 and should_checkpoint:
                ckpt_path = os.path.join(tmpdir, "ckpt.npy")
                trainer.save_checkpoint(ckpt_path)
                checkpoint = Checkpoint.from_directory(tmpdir)
            session.report(metrics=metrics, checkpoint=checkpoint)
    return trainer


session = RayTrainSession()
trainer = train_func(session)
print("RESULT reported", [loss for loss, _ in session.reported])
print("RESULT w", np.round(np.asarray(trainer.w.addressable_data(0)), 4).tolist())

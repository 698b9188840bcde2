# Preemption warning (SIGUSR1) reaches one host; the stop flag its handler sets is read locally
# Source: https://github.com/kyutai-labs/pocket-tts/pull/277
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
import pickle
import signal
import tempfile

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
CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed3_preempt", os.environ.get("JOB_ID", "local"))


class GracefulStop:
    """Catches the scheduler's warning signals; the loop checks it at each step boundary."""

    def __init__(self, signals=(signal.SIGUSR1,)):
        self.received = False
        for sig in signals:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame):
        self.received = True

    def should_stop(self) -> bool:
        return self.received


def _scheduler_warns_one_node(step: int) -> None:
    # Stand-in for `scancel --signal=USR1` / `--signal=USR1@N`: the warning lands on one node only.
    if step == 3 and jax.process_index() == jax.process_count() - 1:
        os.kill(os.getpid(), signal.SIGUSR1)


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        return jnp.mean((x @ w - y) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.05 * g, loss


class Trainer:
    def __init__(self, ckpt_freq: int = 90000):
        self.ckpt_freq = ckpt_freq
        self.stopper = GracefulStop()
        self.w = jax.device_put(jnp.zeros((8, 1), jnp.float32), REPL)
        self.rng = np.random.default_rng(100 + jax.process_index())

    def batch(self):
        x = self.rng.normal(size=(16, 8)).astype(np.float32)
        y = x.sum(axis=1, keepdims=True)
        return (jax.make_array_from_process_local_data(DATA, x),
                jax.make_array_from_process_local_data(DATA, y))

    def save_checkpoint(self, step: int) -> None:
        w = np.asarray(multihost_utils.process_allgather(self.w, tiled=True))
        if jax.process_index() == 0:
            os.makedirs(CKPT_DIR, exist_ok=True)
            with open(os.path.join(CKPT_DIR, f"checkpoint_{step:08d}.pkl"), "wb") as f:
                pickle.dump({"step": step, "w": w}, f)
        multihost_utils.sync_global_devices(f"checkpoint_{step}")

    def fit(self, num_steps: int) -> int:
        step = 0
        while step < num_steps:
            x, y = self.batch()
            self.w, loss = train_step(self.w, x, y)
            step += 1
            _scheduler_warns_one_node(step)
            if step % self.ckpt_freq == 0:
                self.save_checkpoint(step)
            if self.stopper.should_stop():
                self.save_checkpoint(step)
                break
        return step


trainer = Trainer()
last = trainer.fit(num_steps=12)
print("RESULT stopped_at", last)
print("RESULT w", np.round(np.asarray(multihost_utils.process_allgather(trainer.w, tiled=True)).ravel(), 4).tolist())

# SpeechBrain Brain: intra-epoch checkpoint decided by each process's own clock, saved through run_on_main
# Source: https://github.com/speechbrain/speechbrain/pull/2192
# Port to multi-controller JAX of the DDP hang fixed there; written for the mcjax sealed7 set.
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
BATCH = NamedSharding(MESH, P("batch"))
REPL = NamedSharding(MESH, P())
SAVE_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed7_sb", os.environ.get("JOB_ID", "local"))


def if_main_process() -> bool:
    return jax.process_index() == 0


def ddp_barrier(name: str) -> None:
    multihost_utils.sync_global_devices(name)


def run_on_main(func, args=(), name="run_on_main"):
    if if_main_process():
        func(*args)
    ddp_barrier(name)


class Checkpointer:
    def __init__(self, directory: str):
        self.directory = directory
        self.saved = 0

    def save_checkpoint(self, params, step: int) -> None:
        os.makedirs(self.directory, exist_ok=True)
        local = np.asarray(params.addressable_shards[0].data)
        np.save(os.path.join(self.directory, f"CKPT_intra_{step}.npy"), local)
        self.saved += 1


@jax.jit
def _update(w, x):
    loss, g = jax.value_and_grad(lambda v: jnp.mean((x @ v - 1.0) ** 2))(w)
    return w - 0.01 * g, loss


class Brain:
    def __init__(self, checkpointer: Checkpointer, ckpt_interval_minutes: float):
        self.checkpointer = checkpointer
        self.ckpt_interval_minutes = ckpt_interval_minutes
        self.step = 0
        self.params = jax.device_put(jnp.zeros((8, 1), jnp.float32), REPL)

    def fit_batch(self, batch: np.ndarray) -> float:
        x = jax.make_array_from_process_local_data(BATCH, batch)
        self.params, loss = _update(self.params, x)
        return float(loss)

    def _save_intra_epoch_ckpt(self) -> None:
        self.checkpointer.save_checkpoint(self.params, self.step)

    def _should_save_intra_epoch_ckpt(self, last_ckpt_time: float) -> bool:
        if self.ckpt_interval_minutes <= 0:
            return False
        return time.time() - last_ckpt_time >= self.ckpt_interval_minutes * 60.0

    def _fit_train(self, train_set) -> float:
        avg_loss = 0.0
        last_ckpt_time = time.time()
        for batch in train_set:
            self.step += 1
            loss = self.fit_batch(batch)
            avg_loss += (loss - avg_loss) / self.step
            if self._should_save_intra_epoch_ckpt(last_ckpt_time):
                run_on_main(self._save_intra_epoch_ckpt, name="intra_epoch_ckpt")
                last_ckpt_time = time.time()
        return avg_loss


def make_train_set(num_batches: int):
    rng = np.random.default_rng(7 + jax.process_index())  # this process's shard of the data
    for _ in range(num_batches):
        time.sleep(0.002 * (1 + jax.process_index()))  # loader work differs per host
        yield rng.normal(size=(4, 8)).astype(np.float32)


brain = Brain(Checkpointer(SAVE_DIR), ckpt_interval_minutes=0.001)
avg = brain._fit_train(make_train_set(300))
print("RESULT", brain.step, round(float(jnp.sum(brain.params)), 5), round(avg, 5))

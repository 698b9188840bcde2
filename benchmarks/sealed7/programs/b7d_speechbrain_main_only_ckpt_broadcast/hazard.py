# SpeechBrain: the checkpointer broadcasts its time-stamped directory name, but the recipe saves
# from a main-process-only section
# Source: https://github.com/speechbrain/speechbrain/pull/2404
# Port to multi-controller JAX of the DDP freeze reported in speechbrain issue 2401; written for the mcjax sealed7 set.
import functools
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
SAVE_ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed7_sb_main", os.environ.get("JOB_ID", "local"))

MAIN_PROC_ONLY = 0


def if_main_process() -> bool:
    return jax.process_index() == 0


def main_process_only(function):
    @functools.wraps(function)
    def main_proc_wrapped_func(*args, **kwargs):
        global MAIN_PROC_ONLY
        MAIN_PROC_ONLY += 1
        try:
            return function(*args, **kwargs) if if_main_process() else None
        finally:
            MAIN_PROC_ONLY -= 1
    return main_proc_wrapped_func


def _broadcast_str(text: str) -> str:
    buf = np.zeros((64,), np.uint8)
    raw = np.frombuffer(text.encode()[:64], np.uint8)
    buf[:len(raw)] = raw
    out = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    return bytes(out.astype(np.uint8)).rstrip(b"\0").decode()


class Checkpointer:
    def __init__(self, directory: str):
        self.directory = directory

    def _new_checkpoint_dirpath(self) -> str:
        stamp = time.strftime("%Y-%m-%d+%H-%M-%S") + f"+{time.time_ns() % 1000000:06d}"
        # every process must use the same directory (FSDP shards are written by all of them)
        stamp = _broadcast_str(stamp)
        return os.path.join(self.directory, "CKPT+" + stamp)

    def save_and_keep_only(self, params, meta: dict) -> str:
        path = self._new_checkpoint_dirpath()
        os.makedirs(path, exist_ok=True)
        np.save(os.path.join(path, "model.npy"), np.asarray(params.addressable_shards[0].data))
        with open(os.path.join(path, "meta.txt"), "w") as f:
            f.write(repr(meta))
        return path


@jax.jit
def _update(w, x):
    loss, g = jax.value_and_grad(lambda v: jnp.mean((x @ v - 1.0) ** 2))(w)
    return w - 0.01 * g, loss


class NMFBrain:
    def __init__(self, checkpointer: Checkpointer):
        self.checkpointer = checkpointer
        self.params = jax.device_put(jnp.zeros((8, 1), jnp.float32), REPL)

    def fit_batch(self, batch: np.ndarray) -> float:
        self.params, loss = _update(self.params, jax.make_array_from_process_local_data(BATCH, batch))
        return float(loss)

    @main_process_only
    def _save_epoch(self, epoch: int, loss: float) -> None:
        self.checkpointer.save_and_keep_only(self.params, meta={"epoch": epoch, "loss": loss})

    def on_stage_end(self, epoch: int, stage_loss: float) -> None:
        self._save_epoch(epoch, stage_loss)

    def fit(self, epochs: int, batches_per_epoch: int) -> float:
        rng = np.random.default_rng(3 + jax.process_index())
        loss = 0.0
        for epoch in range(epochs):
            for _ in range(batches_per_epoch):
                loss = self.fit_batch(rng.normal(size=(4, 8)).astype(np.float32))
            self.on_stage_end(epoch, loss)
        return loss


brain = NMFBrain(Checkpointer(SAVE_ROOT))
final = brain.fit(epochs=3, batches_per_epoch=5)
print("RESULT", round(float(jnp.sum(brain.params)), 5), round(final, 5))

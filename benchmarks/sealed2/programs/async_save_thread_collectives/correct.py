# Async checkpointing: the state is gathered on the main thread; the background thread only writes files
# Source: https://github.com/KempnerInstitute/KempnerForge/issues/104
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import json
import os
import tempfile
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp"))
OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed2_async", os.environ.get("JOB_ID", "local"))


class AsyncCheckpointer:
    def __init__(self, directory: str):
        self.directory = directory
        self._thread: threading.Thread | None = None

    def _save(self, step: int, meta: dict, full: dict) -> None:
        if jax.process_index() == 0:
            os.makedirs(self.directory, exist_ok=True)
            with open(os.path.join(self.directory, f"step_{step}.json"), "w") as f:
                json.dump({"meta": meta, "norms": {k: float(np.linalg.norm(v)) for k, v in full.items()}}, f)

    def save(self, step: int, state: dict) -> None:
        self.wait()
        meta = {k: list(v.shape) for k, v in state.items()}  # planning: shapes of every leaf
        full = {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in state.items()}
        self._thread = threading.Thread(target=self._save, args=(step, meta, full), daemon=True)
        self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()


class CheckpointManager:
    def __init__(self, checkpointer: AsyncCheckpointer):
        self.checkpointer = checkpointer

    def save(self, step: int, state: dict) -> None:
        self.checkpointer.save(step, state)
        multihost_utils.sync_global_devices(f"checkpoint_saved_{step}")


@jax.jit
def train_step(state):
    w = state["w"]
    return {"w": w - 0.01 * w / (1e-6 + jnp.linalg.norm(w)), "m": 0.9 * state["m"] + 0.1 * jnp.mean(w)}


manager = CheckpointManager(AsyncCheckpointer(OUT_DIR))
local = np.arange(64, dtype=np.float32).reshape(8, 8) * (1 + jax.process_index())
state = {"w": jax.make_array_from_process_local_data(SHARDED, local),
         "m": jax.make_array_from_process_local_data(SHARDED, np.zeros((4,), np.float32))}
for step in range(12):
    state = train_step(state)
    if step % 2 == 0:
        manager.save(step, state)
manager.checkpointer.wait()
print("RESULT", round(float(jnp.sum(state["w"])), 3), round(float(jnp.sum(state["m"])), 3))

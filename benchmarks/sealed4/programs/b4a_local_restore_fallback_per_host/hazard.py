# Emergency checkpoint restore: a host whose local restore fails falls back to persistent storage alone
# Source: https://github.com/google/orbax/commit/4ee8bd523bf6f691b90f4e1ea0cf24b8f05fa657
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import logging
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
SHARDING = NamedSharding(MESH, P("data"))
ROOT = os.path.join(tempfile.gettempdir(), "b4a_p2p_" + os.environ.get("JOB_ID", "job"))
LOCAL_ROWS = 256


class LocalCheckpointManager:
    """Per-host checkpoints on the VM's local disk (only this process's shard)."""

    def __init__(self, directory: str):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    def all_steps(self):
        return sorted(int(f.split(".")[0]) for f in os.listdir(self.directory) if f.endswith(".npy"))

    def save(self, step: int, state):
        np.save(os.path.join(self.directory, f"{step}.npy"), np.asarray(state.addressable_shards[0].data))

    def restore(self, step: int):
        local = np.load(os.path.join(self.directory, f"{step}.npy"))
        return jax.make_array_from_process_local_data(SHARDING, local)


class PersistentCheckpointManager:
    """Shared storage: the primary reads the full state and broadcasts it to every host."""

    def __init__(self, directory: str):
        self.directory = directory

    def save(self, step: int, state):
        full = multihost_utils.process_allgather(state, tiled=True)
        if jax.process_index() == 0:
            np.save(os.path.join(self.directory, f"{step}.npy"), full)

    def restore(self, step: int):
        full = np.zeros((LOCAL_ROWS * jax.process_count(), 8), np.float32)
        if jax.process_index() == 0:
            full = np.load(os.path.join(self.directory, f"{step}.npy"))
        full = multihost_utils.broadcast_one_to_all(full)
        rows = slice(jax.process_index() * LOCAL_ROWS, (jax.process_index() + 1) * LOCAL_ROWS)
        return jax.make_array_from_process_local_data(SHARDING, np.asarray(full[rows]))


class CheckpointManager:
    def __init__(self, local_directory: str, persistent_directory: str):
        self._local_manager = LocalCheckpointManager(local_directory)
        self._persistent_manager = PersistentCheckpointManager(persistent_directory)

    def save(self, step: int, state, persistent: bool):
        self._local_manager.save(step, state)
        if persistent:
            self._persistent_manager.save(step, state)

    def restore(self, step: int):
        # Strategy A: Local Restore
        if step in self._local_manager.all_steps():
            try:
                return self._local_manager.restore(step), "local"
            except (OSError, ValueError) as e:
                logging.warning("Local restore failed: %s", e)
        # Strategy C: Persistent Storage Fallback
        return self._persistent_manager.restore(step), "persistent"


train_step = jax.jit(lambda s: s * 0.99 + 0.01 * jnp.mean(s), out_shardings=SHARDING)


def run_previous_attempt(manager: CheckpointManager):
    """The attempt that got preempted: host 1 was killed while writing its local step-4 file."""
    init = np.arange(LOCAL_ROWS * 8, dtype=np.float32).reshape(LOCAL_ROWS, 8) / 100.0
    state = jax.make_array_from_process_local_data(SHARDING, init + jax.process_index())
    for step in range(1, 5):
        state = train_step(state)
        manager.save(step, state, persistent=(step % 2 == 0))
    if jax.process_index() == 1:
        path = os.path.join(manager._local_manager.directory, "4.npy")
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) // 3])


if jax.process_index() == 0:
    os.makedirs(os.path.join(ROOT, "persistent"))
multihost_utils.sync_global_devices("dirs")
manager = CheckpointManager(os.path.join(ROOT, f"local_{jax.process_index()}"), os.path.join(ROOT, "persistent"))
run_previous_attempt(manager)

state, source = manager.restore(4)
for step in range(5, 9):
    state = train_step(state)
print("RESULT restored", source)
print("RESULT final", round(float(jnp.sum(multihost_utils.process_allgather(state, tiled=True))), 3))

# Continuous checkpointing policy skips a save while this host's async save is still in progress
# Source: https://github.com/google/orbax/commit/6d57e40ed11187751b66fd16223cd93aabb7c8be
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import os
import tempfile
import threading
import time
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass(frozen=True)
class StepInfo:
    step: int


@dataclasses.dataclass(kw_only=True)
class DecisionContext:
    is_saving_in_progress: bool
    reached_preemption: bool


class ContinuousCheckpointingPolicy:
    """Saves as often as possible, as long as no save is in progress."""

    def __init__(self, minimum_interval_steps: Optional[int] = None):
        self.minimum_interval_steps = minimum_interval_steps

    def should_save(self, step: StepInfo, previous_steps: Sequence[StepInfo], context: DecisionContext) -> bool:
        if context.is_saving_in_progress:
            return False
        if not previous_steps or self.minimum_interval_steps is None:
            return True
        return step.step - previous_steps[-1].step >= self.minimum_interval_steps


class AsyncCheckpointManager:
    def __init__(self, directory: str, policy: ContinuousCheckpointingPolicy):
        self.directory = directory
        self.policy = policy
        self._checkpoints: list = []
        self._thread: Optional[threading.Thread] = None

    def is_saving_in_progress(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def should_save(self, step: int) -> bool:
        context = DecisionContext(is_saving_in_progress=self.is_saving_in_progress(), reached_preemption=False)
        return self.policy.should_save(StepInfo(step), self._checkpoints, context)

    def _write(self, step_dir: str, host_shards: list):
        for i, shard in enumerate(host_shards):
            np.save(os.path.join(step_dir, f"p{jax.process_index()}_{i}.npy"), shard)
            time.sleep(0.002 * shard.size / 1024)  # object-store upload, proportional to shard size

    def save(self, step: int, state) -> bool:
        if not self.should_save(step):
            return False
        step_dir = os.path.join(self.directory, str(step))
        os.makedirs(step_dir, exist_ok=True)
        multihost_utils.sync_global_devices(f"checkpoint_manager:save:{step}")
        host_shards = [np.asarray(s.data) for s in state.addressable_shards]
        self._thread = threading.Thread(target=self._write, args=(step_dir, host_shards))
        self._thread.start()
        self._checkpoints.append(StepInfo(step))
        return True


# Host 1 owns the embedding rows of the long-tail vocabulary: its shard is much larger on disk.
LOCAL_ROWS = 8 if jax.process_index() == 0 else 160


def host_extra_state() -> np.ndarray:
    return np.ones((LOCAL_ROWS, 1024), np.float32)


mesh = jax.make_mesh((jax.device_count(),), ("data",))
sharding = NamedSharding(mesh, P("data"))
params = jax.make_array_from_process_local_data(sharding, np.full((4,), 1.0, np.float32))
extra = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), host_extra_state())
train_step = jax.jit(lambda p: p * 0.9 + jnp.mean(p), out_shardings=sharding)

manager = AsyncCheckpointManager(tempfile.mkdtemp(prefix="b4a_async_save_"), ContinuousCheckpointingPolicy())
saved = []
for step in range(12):
    params = train_step(params)
    params.block_until_ready()
    time.sleep(0.03)
    if manager.save(step, extra):
        saved.append(step)
if manager._thread is not None:
    manager._thread.join()

print("RESULT saved", saved)
print("RESULT params", round(float(jnp.sum(params)), 5))

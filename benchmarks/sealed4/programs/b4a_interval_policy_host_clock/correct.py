# Continuous checkpointing policy: the interval decision is made on the primary host and broadcast to all hosts
# Source: https://github.com/google/orbax/commit/d21edc12ce69512fb7f73e701427116287bbd681
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import datetime
import os
import time
from typing import List, Optional, Sequence

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
    time: datetime.datetime


@dataclasses.dataclass(kw_only=True)
class DecisionContext:
    is_saving_in_progress: bool
    reached_preemption: bool


class ContinuousCheckpointingPolicy:
    def __init__(self, minimum_interval_secs: Optional[float] = None):
        self.minimum_interval_secs = minimum_interval_secs

    def should_save(self, step: StepInfo, previous_steps: Sequence[StepInfo], context: DecisionContext) -> bool:
        if context.is_saving_in_progress:
            return False
        if not previous_steps or self.minimum_interval_secs is None:
            return True
        save_result = False
        is_primary_host = jax.process_index() == 0
        # Make time based decision only on primary host and broadcast to all hosts.
        if is_primary_host:
            save_result = step.time - previous_steps[-1].time >= datetime.timedelta(
                seconds=self.minimum_interval_secs)
        return bool(multihost_utils.broadcast_one_to_all(np.int32(save_result), is_source=is_primary_host))


class CheckpointManager:
    def __init__(self, policy: ContinuousCheckpointingPolicy):
        self._policy = policy
        self._checkpoints: List[StepInfo] = []
        self.saved_values = []

    def should_save(self, step: int) -> bool:
        current_step_info = StepInfo(step=step, time=datetime.datetime.now(tz=datetime.timezone.utc))
        context = DecisionContext(is_saving_in_progress=False, reached_preemption=False)
        if self._policy.should_save(current_step_info, previous_steps=self._checkpoints, context=context):
            self._pending = current_step_info
            return True
        return False

    def save(self, step: int, state) -> None:
        host_copy = multihost_utils.process_allgather(state, tiled=True)
        self.saved_values.append((step, round(float(np.sum(host_copy)), 4)))
        self._checkpoints.append(self._pending)


class ShardedTextLoader:
    """Host 1's shard is split into small files: every third batch opens a new file from the bucket."""

    def __init__(self, sharding):
        self.sharding = sharding
        self.rng = np.random.default_rng(7 + jax.process_index())
        self.index = 0

    def __next__(self):
        if jax.process_index() == 1 and self.index % 3 == 0:
            time.sleep(0.3)  # open the next shard file
        self.index += 1
        return jax.make_array_from_process_local_data(self.sharding, self.rng.normal(size=(1, 4)).astype(np.float32))


mesh = jax.make_mesh((jax.device_count(),), ("data",))
sharding = NamedSharding(mesh, P("data"))
train_step = jax.jit(lambda s, b: s + 0.1 * jnp.mean(b) - 0.01 * s, out_shardings=sharding)
state = jax.make_array_from_process_local_data(sharding, np.ones((1, 4), np.float32))
loader = ShardedTextLoader(sharding)
train_step(state, next(loader)).block_until_ready()  # compile before timing the loop
loader = ShardedTextLoader(sharding)
manager = CheckpointManager(ContinuousCheckpointingPolicy(minimum_interval_secs=0.6))

for step in range(9):
    batch = next(loader)
    if manager.should_save(step):
        manager.save(step, state)
    state = train_step(state, batch)
    state.block_until_ready()
    time.sleep(0.03)

print("RESULT saved", manager.saved_values)
print("RESULT state", round(float(np.sum(multihost_utils.process_allgather(state, tiled=True))), 4))

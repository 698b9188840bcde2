# The step directory is created by the primary host only; other hosts write their shards into it at once
# Source: https://github.com/GoogleCloudPlatform/ml-testing-accelerators/pull/782
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
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

MESH = jax.make_mesh((jax.device_count(),), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp"))
ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed2_mkdir", os.environ.get("JOB_ID", "local"))


class ShardedCheckpointManager:
    def __init__(self, root: str, max_to_keep: int = 1):
        self.root = root
        self.max_to_keep = max_to_keep
        self.is_primary = jax.process_index() == 0

    def _prune(self) -> None:
        steps = sorted(int(d.split("_")[1]) for d in os.listdir(self.root) if d.startswith("step_"))
        for old in steps[:-self.max_to_keep] if self.max_to_keep else []:
            shutil.rmtree(os.path.join(self.root, f"step_{old}"))

    def _write_metadata(self, step_dir: str, state: dict) -> None:
        with open(os.path.join(step_dir, "_METADATA"), "w") as f:
            for name, value in state.items():
                f.write(f"{name} {value.shape} {value.dtype}\n")

    def save(self, step: int, state: dict) -> None:
        step_dir = os.path.join(self.root, f"step_{step}")
        if self.is_primary:
            os.makedirs(self.root, exist_ok=True)
            self._prune()
            os.makedirs(step_dir)
            self._write_metadata(step_dir, state)
        for name, value in state.items():
            for shard in value.addressable_shards:
                np.save(os.path.join(step_dir, f"{name}.shard{shard.index[0].start}.npy"), np.asarray(shard.data))
        multihost_utils.sync_global_devices(f"commit_step_{step}")


@jax.jit
def update(state):
    return {k: v * 0.5 + 1.0 for k, v in state.items()}


state = {f"layer{i}": jax.make_array_from_process_local_data(
    SHARDED, np.full((32, 4), float(i), np.float32)) for i in range(12)}
manager = ShardedCheckpointManager(ROOT)
for step in range(4):
    state = update(state)
    manager.save(step, state)
print("RESULT", round(float(sum(jnp.sum(v) for v in state.values())), 3))

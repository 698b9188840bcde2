# Process 0 finalizes the checkpoint directory, then every process syncs before reading the finalized directory
# Source: https://github.com/google/orbax/commit/6d5560738841176fa3a36d5e2c4ba908e3cc3bae
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import json
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

ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed8_finalize", os.environ.get("JOB_ID", "local"))
MESH = jax.make_mesh((jax.device_count(),), ("data",))
SHARDED = NamedSharding(MESH, P("data"))


class CheckpointManager:
    def __init__(self, directory: str):
        self.directory = directory
        if jax.process_index() == 0:
            os.makedirs(directory, exist_ok=True)
        multihost_utils.sync_global_devices("CheckpointManager:create_root")

    def all_steps(self):
        return sorted(int(d) for d in os.listdir(self.directory) if d.isdigit())

    def latest_step(self):
        steps = self.all_steps()
        return steps[-1] if steps else None

    def _finalize(self, tmp_dir: str, step: int, state: dict) -> str:
        final_dir = None
        if jax.process_index() == 0:
            for name, value in state.items():
                with open(os.path.join(tmp_dir, f"{name}.meta.json"), "w") as f:
                    json.dump({"shape": list(value.shape), "dtype": str(value.dtype)}, f)
            final_dir = os.path.join(self.directory, str(step))
            os.rename(tmp_dir, final_dir)  # ensure_atomic_save
        multihost_utils.sync_global_devices("CheckpointManager:finalized_checkpoint")
        return final_dir

    def save(self, step: int, state: dict) -> None:
        tmp_dir = os.path.join(self.directory, f"{step}.orbax-checkpoint-tmp")
        if jax.process_index() == 0:
            os.makedirs(tmp_dir)
        multihost_utils.sync_global_devices(f"CheckpointManager:tmp_dir_{step}")
        for name, value in state.items():
            for shard in value.addressable_shards:
                np.save(os.path.join(tmp_dir, f"{name}.{shard.index[0].start}.npy"), np.asarray(shard.data))
        multihost_utils.sync_global_devices(f"CheckpointManager:write_{step}")
        self._finalize(tmp_dir, step, state)

    def restore(self, step: int) -> dict:
        d = os.path.join(self.directory, str(step))
        names = sorted({f.split(".")[0] for f in os.listdir(d) if f.endswith(".npy")})
        out = {}
        for name in names:
            start = jax.process_index() * 2
            local = np.load(os.path.join(d, f"{name}.{start}.npy"))
            out[name] = jax.make_array_from_process_local_data(SHARDED, local)
        return out


@jax.jit
def train_step(state):
    return {k: v * 0.9 + 1.0 for k, v in state.items()}


@jax.jit
def evaluate(state):
    return sum(jnp.sum(v * v) for v in state.values())


def main():
    if jax.process_index() == 0:
        shutil.rmtree(ROOT, ignore_errors=True)
    multihost_utils.sync_global_devices("clean")
    manager = CheckpointManager(ROOT)
    state = {f"w{i}": jax.make_array_from_process_local_data(SHARDED, np.full((2, 3), float(i), np.float32))
             for i in range(16)}
    last_evaluated = -1
    for step in range(6):
        state = train_step(state)
        if step % 2 == 0:
            manager.save(step, state)
        latest = manager.latest_step()
        if latest is not None and latest > last_evaluated:
            restored = manager.restore(latest)
            print("RESULT eval", latest, round(float(evaluate(restored)), 3))
            last_evaluated = latest
    print("RESULT final", round(float(evaluate(state)), 3))


main()

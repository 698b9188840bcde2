# save() returns on non-primary processes before the primary commits; load() then checks exists() on every process
# Source: https://github.com/KempnerInstitute/KempnerForge/issues/49
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import json
import os
import pickle
import shutil
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp"))
CKPT_ROOT = Path(tempfile.gettempdir()) / "mcjax_sealed3_exists" / os.environ.get("JOB_ID", "local")
SAVE_EVERY = 3


class CheckpointManager:
    def __init__(self, root: Path, keep_last_n: int = 2):
        self.root, self.keep_last_n = root, keep_last_n
        self.rank = jax.process_index()

    def save(self, step: int, state: dict) -> None:
        full = {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in state.items()}
        if self.rank == 0:
            step_dir = self.root / f"step_{step}"
            step_dir.mkdir(parents=True, exist_ok=True)
            with open(step_dir / "train_state.pt", "wb") as f:
                pickle.dump(full, f)
            (step_dir / "metadata.json").write_text(json.dumps({"step": step}))
            self._cleanup()
            latest = self.root / "latest"
            if latest.is_symlink():
                latest.unlink()
            latest.symlink_to(step_dir.name)

    def _cleanup(self) -> None:
        steps = sorted(int(p.name.split("_")[1]) for p in self.root.glob("step_*"))
        for old in steps[:-self.keep_last_n]:
            shutil.rmtree(self.root / f"step_{old}")

    def load(self, like: dict) -> tuple[int, dict]:
        train_state_path = self.root / "latest" / "train_state.pt"
        step, payload = 0, None
        if train_state_path.exists():
            with open(train_state_path, "rb") as f:
                payload = pickle.load(f)
            step = json.loads((self.root / "latest" / "metadata.json").read_text())["step"]
            payload = multihost_utils.broadcast_one_to_all(payload)
            step = int(multihost_utils.broadcast_one_to_all(np.int32(step)))
        if payload is None:
            return step, like
        local = {k: np.asarray(v)[[s.index for s in like[k].addressable_shards][0]] for k, v in payload.items()}
        return step, {k: jax.make_array_from_process_local_data(SHARDED, local[k]) for k in like}


@jax.jit
def train_step(state):
    return {k: v * 0.9 + 0.1 for k, v in state.items()}


def run() -> None:
    state = {f"w{i}": jax.make_array_from_process_local_data(
        SHARDED, np.full((1024, 512), float(i), np.float32)) for i in range(6)}
    if jax.process_index() == 0:
        shutil.rmtree(CKPT_ROOT, ignore_errors=True)  # overwrite=True: start from an empty run directory
    multihost_utils.sync_global_devices("fresh_run_dir")
    manager = CheckpointManager(CKPT_ROOT)
    for step in range(1, 4):
        state = train_step(state)
        if step % SAVE_EVERY == 0:
            manager.save(step, state)
    # export phase: reload the latest committed checkpoint for evaluation
    step, restored = manager.load(like=state)
    total = float(sum(jnp.sum(v) for v in restored.values()))
    print("RESULT restored_step", step)
    print("RESULT restored_sum", round(total, 3))


run()

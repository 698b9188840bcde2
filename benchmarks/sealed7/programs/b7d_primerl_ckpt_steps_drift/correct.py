# prime-rl multi-run trainer: maybe_clean returns early on non-master ranks, so their ckpt_steps drift
# Source: https://github.com/PrimeIntellect-ai/prime-rl/pull/2354
# Port to multi-controller JAX of the fix (run maybe_clean on all ranks); written for the mcjax sealed7 set.
import os
import shutil
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("fsdp",))
FSDP = NamedSharding(MESH, P("fsdp"))
OUT = os.path.join(tempfile.gettempdir(), "mcjax_sealed7_primerl", os.environ.get("JOB_ID", "local"), "checkpoints")


def is_master() -> bool:
    return jax.process_index() == 0


@dataclass
class Progress:
    step: int


class CheckpointManager:
    def __init__(self, directory: str, interval: int, keep_last: int):
        self.directory = directory
        self.interval = interval
        self.keep_last = keep_last
        self.ckpt_steps = sorted(int(d.split("_")[1]) for d in os.listdir(directory) if d.startswith("step_"))

    def _should_save(self, step: int) -> bool:
        return step % self.interval == 0 and step not in self.ckpt_steps

    def save(self, step: int, params) -> None:
        full = np.asarray(multihost_utils.process_allgather(params, tiled=True))  # gather FSDP shards
        if is_master():
            path = os.path.join(self.directory, f"step_{step}")
            os.makedirs(path, exist_ok=True)
            np.save(os.path.join(path, "weights.npy"), full)
        self.ckpt_steps.append(step)

    def maybe_clean(self) -> None:
        while len(self.ckpt_steps) > self.keep_last:
            old = self.ckpt_steps.pop(0)
            if is_master():
                shutil.rmtree(os.path.join(self.directory, f"step_{old}"), ignore_errors=True)


class MultiCheckpointManager:
    def __init__(self, manager: CheckpointManager):
        self.manager = manager

    def maybe_save(self, step: int, params) -> None:
        if self.manager._should_save(step):
            self.manager.save(step, params)

    def maybe_clean(self) -> None:
        # every rank updates its ckpt_steps; only the master deletes directories
        self.manager.maybe_clean()


@jax.jit
def train_step(w):
    return w - 0.01 * jnp.sign(w) * jnp.mean(jnp.abs(w))


for old_step in (440, 450):  # per-run checkpoint directories left by the previous job
    os.makedirs(os.path.join(OUT, f"step_{old_step}"), exist_ok=True)
ckpt = MultiCheckpointManager(CheckpointManager(OUT, interval=10, keep_last=1))
runs = [Progress(step=450), Progress(step=430)]  # run 0 resumed from step_450, run 1 is behind
params = [jax.make_array_from_process_local_data(FSDP, np.arange(4, dtype=np.float32) + 1 + r) for r in range(2)]
for _ in range(12):
    for idx, run in enumerate(runs):
        params[idx] = train_step(params[idx])
        run.step += 1
        ckpt.maybe_save(run.step, params[idx])
    ckpt.maybe_clean()
print("RESULT", [r.step for r in runs], [round(float(jnp.sum(p)), 5) for p in params])
multihost_utils.sync_global_devices("job_done")
if is_master():
    shutil.rmtree(os.path.dirname(OUT), ignore_errors=True)

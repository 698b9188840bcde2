# Step discovery with single_host_load_and_broadcast still globs the step directories on every
# process, and sizes (or skips) the broadcast of the step list by that process's own glob.
# Source: https://github.com/google/orbax/commit/8a9cdd8eae0007f4040f3a25bf0430be8b590557
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import hashlib
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
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())


class StandardNameFormat:
    step_prefix = "step_"

    def _glob_step_paths(self, base_path):
        return sorted(os.path.join(base_path, n) for n in os.listdir(base_path)
                      if n.startswith(self.step_prefix) and n[len(self.step_prefix):].isdigit())

    def find_all_with_single_host_load_and_broadcast(self, base_path):
        is_primary_host = jax.process_index() == 0
        step_paths = self._glob_step_paths(base_path)
        if not step_paths:
            return []
        padded_step_list = np.array([-1] * len(step_paths), dtype=np.int32)
        if is_primary_host:
            steps = sorted(int(os.path.basename(p)[len(self.step_prefix):]) for p in step_paths)
            padded_step_list[:len(steps)] = steps
        padded_step_list = multihost_utils.broadcast_one_to_all(padded_step_list, is_source=is_primary_host)
        return [int(s) for s in padded_step_list if s >= 0]


class CheckpointManager:
    def __init__(self, directory, name_format):
        self.directory = directory
        self.name_format = name_format
        os.makedirs(directory, exist_ok=True)

    def all_steps(self):
        return self.name_format.find_all_with_single_host_load_and_broadcast(self.directory)

    def latest_step(self):
        steps = self.all_steps()
        return max(steps) if steps else None

    def save(self, step, params):
        tmp = os.path.join(self.directory, f"step_{step}.orbax-checkpoint-tmp")
        os.makedirs(tmp, exist_ok=True)
        shard = np.asarray(params["w"].addressable_data(0))
        np.save(os.path.join(tmp, f"w.process_{jax.process_index()}.npy"), np.tile(shard, 1 << 20))
        multihost_utils.sync_global_devices(f"CheckpointManager:save:{step}")
        if jax.process_index() == 0:
            self._finalize(tmp, step)

    def _finalize(self, tmp, step):
        digest = hashlib.sha256()
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name), "rb") as f:
                digest.update(f.read())
        with open(os.path.join(tmp, "_CHECKPOINT_METADATA"), "w") as f:
            f.write(digest.hexdigest())
        os.rename(tmp, os.path.join(self.directory, f"step_{step}"))


@jax.jit
def train_step(params, x):
    grads = jax.grad(lambda p: jnp.mean((x @ p["w"]) ** 2))(params)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads)


ckpt_dir = os.path.join(tempfile.gettempdir(), f"b5a_steps_{os.environ.get('JOB_ID', 'local')}")
manager = CheckpointManager(ckpt_dir, StandardNameFormat())
params = jax.device_put({"w": jnp.ones((4,))}, REPL)
rng = np.random.default_rng(7 + jax.process_index())
for step in range(1, 7):
    local = rng.normal(size=(2, 4)).astype(np.float32)
    params = train_step(params, jax.make_array_from_process_local_data(DATA, local))
    if step % 2 == 0:
        manager.save(step, params)
        print("saved; latest step is", manager.latest_step())

print("RESULT", manager.latest_step(), round(float(jnp.sum(params["w"])), 5))

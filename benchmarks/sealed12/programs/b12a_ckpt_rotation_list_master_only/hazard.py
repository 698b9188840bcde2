# The checkpoint rotation list is rebuilt from disk only on the master at restart; cleanup barriers then differ per host
# Source: https://github.com/PrimeIntellect-ai/prime-rl/pull/1593
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import json
import os
import re
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_ckpt_rotation_list_master_only",
                        os.environ.get("JOB_ID", "local"))
KEEP_LAST, FIRST_RUN_STEPS, TOTAL_STEPS = 2, 4, 6


class WeightCheckpointManager:
    def __init__(self):
        self.rank = jax.process_index()
        self.is_master = self.rank == 0
        os.makedirs(CKPT_DIR, exist_ok=True)
        self.ckpt_steps = []
        if self.is_master:                       # resume bookkeeping from what is on disk
            self.ckpt_steps = sorted(int(m.group(1)) for d in os.listdir(CKPT_DIR)
                                     if (m := re.fullmatch(r"step_(\d+)", d)))

    def save(self, step, weights):
        step_dir = os.path.join(CKPT_DIR, f"step_{step}")
        os.makedirs(step_dir, exist_ok=True)
        with open(os.path.join(step_dir, f"shard{self.rank}.json"), "w") as f:
            json.dump(np.asarray(weights.addressable_data(0)).tolist(), f)
        multihost_utils.sync_global_devices(f"saved step {step}")
        self.ckpt_steps.append(step)
        self.maybe_clean()

    def maybe_clean(self):
        while len(self.ckpt_steps) > KEEP_LAST:
            old = self.ckpt_steps.pop(0)
            shard = os.path.join(CKPT_DIR, f"step_{old}", f"shard{self.rank}.json")
            if os.path.exists(shard):
                os.remove(shard)
            multihost_utils.sync_global_devices(f"cleaned step {old}")   # all shards gone
            if self.is_master:
                shutil.rmtree(os.path.join(CKPT_DIR, f"step_{old}"), ignore_errors=True)


def run(until, start_step, weights, step_fn, manager):
    for step in range(start_step + 1, until + 1):
        weights = step_fn(weights)
        manager.save(step, weights)
    return weights


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("fsdp",))
    sharding = NamedSharding(mesh, P("fsdp"))
    step_fn = jax.jit(lambda w: w * 0.9 + 0.1 * jnp.mean(w), out_shardings=sharding)
    init = np.full((2,), 1.0 + jax.process_index(), np.float32)
    weights = run(FIRST_RUN_STEPS, 0, jax.make_array_from_process_local_data(sharding, init),
                  step_fn, WeightCheckpointManager())
    # the trainer restarts (same weights, new manager) and continues from the last checkpoint
    manager = WeightCheckpointManager()
    weights = run(TOTAL_STEPS, FIRST_RUN_STEPS, weights, step_fn, manager)
    total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(weights)
    print("RESULT kept_steps", manager.ckpt_steps)
    print("RESULT weights_sum", round(float(total), 5))


main()

# Checkpointer.save lets non-zero processes return before process 0 renames tmp_dir to the final dir
# Source: https://github.com/google-research/t5x/commit/98e14a9a0a42001af5d7a28b615b1fc7042a34aa
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import io
import os
import re
import tempfile
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
SHARDING = NamedSharding(MESH, P("data"))
ROWS_PER_HOST = 8192


def latest_step(model_dir: str) -> Optional[int]:
    """Returns the latest finalized checkpoint step in model_dir, if any."""
    steps = [int(m.group(1)) for d in os.listdir(model_dir)
             if (m := re.fullmatch(r"checkpoint_(\d+)", d))]
    return max(steps) if steps else None


class Checkpointer:
    def __init__(self, model_dir: str):
        self.model_dir = model_dir

    def _write_shards(self, tmp_dir: str, params):
        for shard in params.addressable_shards:
            np.save(os.path.join(tmp_dir, f"target.params.{jax.process_index()}.npy"), np.asarray(shard.data))

    def save(self, params, step: int):
        final_dir = os.path.join(self.model_dir, f"checkpoint_{step}")
        tmp_dir = final_dir + ".tmp"
        os.makedirs(tmp_dir, exist_ok=True)
        self._write_shards(tmp_dir, params)
        written_state = multihost_utils.process_allgather(params, tiled=True)

        # Block until complete on all hosts.
        multihost_utils.sync_global_devices(f"checkpointer:write_complete:{tmp_dir}")
        if jax.process_index() != 0:
            return

        # Host 0 only.
        # Write msgpack-like state file in host 0 only
        buf = io.BytesIO()
        np.savez_compressed(buf, version=np.int32(3), params=written_state)
        with open(os.path.join(tmp_dir, "checkpoint"), "wb") as fp:
            fp.write(buf.getvalue())
        # Finalize checkpoint directory.
        os.rename(tmp_dir, final_dir)

    def restore(self, step: int):
        path = os.path.join(self.model_dir, f"checkpoint_{step}", f"target.params.{jax.process_index()}.npy")
        return jax.make_array_from_process_local_data(SHARDING, np.load(path))


def evaluate_latest(checkpointer: Checkpointer, fallback):
    """Evaluates the most recent checkpoint (what a sidecar evaluator would see)."""
    step = latest_step(checkpointer.model_dir)
    params = fallback if step is None else checkpointer.restore(step)
    return step, float(jax.jit(lambda p: jnp.sum(p * p))(params))


init = np.linspace(-1.0, 1.0, ROWS_PER_HOST * 64, dtype=np.float32).reshape(ROWS_PER_HOST, 64)
params = jax.make_array_from_process_local_data(SHARDING, init + jax.process_index())
train_step = jax.jit(lambda p: p - 0.05 * (p - jnp.mean(p)), out_shardings=SHARDING)
model_dir = os.path.join(tempfile.gettempdir(), "b4a_t5x_ckpt_" + os.environ.get("JOB_ID", "job"))
if jax.process_index() == 0:
    os.makedirs(model_dir, exist_ok=False)
multihost_utils.sync_global_devices("model_dir_created")
checkpointer = Checkpointer(model_dir)

for step in range(1, 7):
    params = train_step(params)
    if step % 2 == 0:
        checkpointer.save(params, step)
        eval_step, eval_value = evaluate_latest(checkpointer, params)
        print("RESULT eval", step, eval_step, round(eval_value, 2))

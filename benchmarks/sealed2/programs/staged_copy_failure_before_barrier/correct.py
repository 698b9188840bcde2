# Promoting a locally staged checkpoint: copy errors are recorded and reduced across nodes before publishing
# Source: https://github.com/ByteDance-Seed/VeOmni/pull/1172
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
JOB = os.environ.get("JOB_ID", "local")
STAGE_ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed2_stage", JOB)  # node-local scratch
FINAL_ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed2_final", JOB)  # shared storage
METADATA_NAME = ".metadata"


def _barrier(name: str) -> None:
    multihost_utils.sync_global_devices(name)


def _any_rank_failed(failed: bool) -> bool:
    return bool(np.max(multihost_utils.process_allgather(np.int32(failed))))


def stage(step: int, state: dict) -> tuple[str, list[str]]:
    stage_path = os.path.join(STAGE_ROOT, f"node{jax.process_index()}", f"step_{step}")
    os.makedirs(stage_path, exist_ok=True)
    names = []
    for key, value in state.items():
        name = f"{key}.{jax.process_index()}.npy"
        np.save(os.path.join(stage_path, name), np.asarray(value.addressable_data(0)))
        names.append(name)
    if jax.process_index() == 0:  # the coordinator writes the global metadata
        with open(os.path.join(stage_path, METADATA_NAME), "w") as f:
            f.write(repr({k: v.shape for k, v in state.items()}))
    return stage_path, names + [METADATA_NAME]


def promote(step: int, stage_path: str, names: list[str]) -> bool:
    final_path = os.path.join(FINAL_ROOT, f"step_{step}")
    os.makedirs(final_path, exist_ok=True)
    error = None
    try:
        for name in names:
            shutil.copyfile(os.path.join(stage_path, name), os.path.join(final_path, name))
    except BaseException as e:  # noqa: BLE001 - reduced across ranks below
        error = e
    # Publish only if every node's data landed; this collective also closes the copy phase.
    anyone_failed = _any_rank_failed(error is not None)
    if jax.process_index() == 0 and not anyone_failed:
        open(os.path.join(final_path, "COMMITTED"), "w").close()
    shutil.rmtree(stage_path, ignore_errors=True)
    return not anyone_failed


@jax.jit
def step_fn(state):
    return {k: v * 0.9 + 0.1 for k, v in state.items()}


state = {k: jax.make_array_from_process_local_data(SHARDED, np.ones((4, 3), np.float32) * i)
         for i, k in enumerate(["embed", "proj", "head"])}
published = []
for step in range(3):
    state = step_fn(state)
    stage_path, names = stage(step, state)
    published.append(promote(step, stage_path, names))

print("RESULT", published, round(float(sum(jnp.sum(v) for v in state.values())), 4))

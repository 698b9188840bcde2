# save_checkpoint writes the main checkpoint file on every process when the target holds no GDA (host-local data)
# Source: https://github.com/google/flax/commit/6781c5967c5b2e21c4f99537bdc7274ada00e24e
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import os
import pickle
import re
import tempfile
from typing import Any, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
SHARDED = NamedSharding(MESH, P("data"))
GDA_PLACEHOLDER = "//GDAPlaceholder:"


def _split_gdas(target: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, jax.Array]]:
    main, gdas = {}, {}
    for k, v in target.items():
        if isinstance(v, jax.Array) and not v.is_fully_addressable:
            main[k], gdas[k] = GDA_PLACEHOLDER + k, v
        else:
            main[k] = v
    return main, gdas


def _save_gdas(gda_dir: str, gda_targets: Dict[str, jax.Array]):
    os.makedirs(gda_dir, exist_ok=True)
    for k, v in gda_targets.items():
        np.save(os.path.join(gda_dir, f"{k}.{jax.process_index()}.npy"), np.asarray(v.addressable_shards[0].data))
    multihost_utils.sync_global_devices(f"flax:save_gdas:{os.path.basename(gda_dir)}")


def _save_main_checkpoint_file(target: bytes, paths: Tuple[str, str]):
    ckpt_tmp_path, ckpt_path = paths
    with open(ckpt_tmp_path, "wb") as fp:
        fp.write(target)
    os.replace(ckpt_tmp_path, ckpt_path)


def save_checkpoint(ckpt_dir: str, target: Dict[str, Any], step: int, prefix: str = "checkpoint_"):
    """Save a checkpoint of the model; GDAs are written by every process, the rest to one file."""
    os.makedirs(ckpt_dir, exist_ok=True)
    ckpt_path = os.path.join(ckpt_dir, f"{prefix}{step}")
    main_target, gda_targets = _split_gdas(target)
    if gda_targets:
        _save_gdas(f"{ckpt_path}_gda", gda_targets)
    data = pickle.dumps(main_target)
    if jax.process_index() == 0 or not gda_targets:
        _save_main_checkpoint_file(data, (ckpt_path + ".tmp", ckpt_path))
    return ckpt_path


def latest_checkpoint(ckpt_dir: str, prefix: str = "checkpoint_") -> Optional[str]:
    if not os.path.isdir(ckpt_dir):
        return None
    steps = [int(m.group(1)) for f in os.listdir(ckpt_dir) if (m := re.fullmatch(prefix + r"(\d+)", f))]
    return os.path.join(ckpt_dir, f"{prefix}{max(steps)}") if steps else None


def restore_checkpoint(ckpt_dir: str, target: Dict[str, Any]) -> Dict[str, Any]:
    ckpt_path = latest_checkpoint(ckpt_dir)
    if ckpt_path is None:
        return target
    with open(ckpt_path, "rb") as fp:
        restored = pickle.load(fp)
    for k, v in restored.items():
        if isinstance(v, str) and v.startswith(GDA_PLACEHOLDER):
            shard = np.load(os.path.join(f"{ckpt_path}_gda", f"{k}.{jax.process_index()}.npy"))
            restored[k] = jax.make_array_from_process_local_data(SHARDED, shard)
    return restored


# Every host keeps its own local workdir: the input pipeline state (how many local examples were consumed and
# the running mean of this host's token counts) is host-local data, not a GDA.
job = os.environ.get("JOB_ID", "job")
host_workdir = os.path.join(tempfile.gettempdir(), f"b4a_flax_{job}_host{jax.process_index()}")
shared_workdir = os.path.join(tempfile.gettempdir(), f"b4a_flax_{job}_shared")
train_step = jax.jit(lambda p, b: p - 0.1 * (p - jnp.mean(b)), out_shardings=SHARDED)


def fresh_state():
    return {"step": 0, "params": jax.make_array_from_process_local_data(SHARDED, np.zeros((1, 4), np.float32)),
            "examples_seen": 0, "token_mean": 0.0}


def split_state(state):
    """Model state (GDAs, shared workdir) and this host's input pipeline state (host-local workdir)."""
    model = {"step": state["step"], "params": state["params"]}
    data = {"step": state["step"], "examples_seen": state["examples_seen"], "token_mean": state["token_mean"]}
    return model, data


def run(state, num_steps: int):
    rng = np.random.default_rng(100 * jax.process_index() + state["step"])
    for _ in range(num_steps):
        local = rng.integers(1, 9, size=(1, 4)).astype(np.float32)
        state["params"] = train_step(state["params"], jax.make_array_from_process_local_data(SHARDED, local))
        state["examples_seen"] += 1
        state["token_mean"] += (float(local.mean()) - state["token_mean"]) / state["examples_seen"]
        state["step"] += 1
    return state


state = run(fresh_state(), 4)
model_state, data_state = split_state(state)
save_checkpoint(shared_workdir, model_state, state["step"])
save_checkpoint(host_workdir, data_state, state["step"])

# The job is preempted here and restarts from the checkpoints.
multihost_utils.sync_global_devices("restart")
init_model, init_data = split_state(fresh_state())
restored = {**restore_checkpoint(shared_workdir, init_model), **restore_checkpoint(host_workdir, init_data)}
host_stats = jax.make_array_from_process_local_data(
    SHARDED, np.array([[restored["examples_seen"], restored["token_mean"]]], np.float32))
totals = multihost_utils.process_allgather(host_stats, tiled=True)
print("RESULT restored step", restored["step"], round(float(jnp.sum(multihost_utils.process_allgather(restored["params"], tiled=True))), 4))
print("RESULT examples seen", [int(x) for x in totals[:, 0]])

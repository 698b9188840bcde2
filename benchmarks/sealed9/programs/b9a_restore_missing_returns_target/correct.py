# The checkpoint restored on process 0 (the only host that saved one) is broadcast to every host
# Source: https://github.com/google/flax/issues/1631
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
JOB_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_restore_missing", os.environ.get("JOB_ID", "local"))
LOCAL_CKPT_DIR = os.path.join(JOB_DIR, f"host{jax.process_index()}")  # each host's own local disk
os.makedirs(LOCAL_CKPT_DIR, exist_ok=True)
TOTAL_STEPS = 6


def save_checkpoint(ckpt_dir, target, step):
    with open(os.path.join(ckpt_dir, f"checkpoint_{step}"), "wb") as f:
        pickle.dump(jax.tree.map(np.asarray, target), f)


def restore_checkpoint(ckpt_dir, target):
    """As flax.training.checkpoints did: no checkpoint present -> return `target` unchanged."""
    names = sorted(n for n in os.listdir(ckpt_dir) if n.startswith("checkpoint_"))
    if not names:
        return target
    with open(os.path.join(ckpt_dir, names[-1]), "rb") as f:
        return pickle.load(f)


def init_state():
    return {"step": np.int32(0), "w": np.zeros((4,), np.float32)}


@jax.jit
def train_step(w, x):
    return w + 0.1 * jnp.mean(x, axis=0)


def batch(step):
    base = np.arange(8, dtype=np.float32).reshape(2, 4) + step + 10 * jax.process_index()
    return base


def run(mesh, resume, stop_after=None):
    data = NamedSharding(mesh, P("data"))
    state = init_state()
    if resume:
        state = multihost_utils.broadcast_one_to_all(restore_checkpoint(LOCAL_CKPT_DIR, state))
    w = jax.device_put(state["w"], NamedSharding(mesh, P()))
    step = int(state["step"])
    while step < TOTAL_STEPS:
        w = train_step(w, jax.make_array_from_process_local_data(data, batch(step)))
        step += 1
        if step % 3 == 0 and jax.process_index() == 0:
            save_checkpoint(LOCAL_CKPT_DIR, {"step": np.int32(step), "w": w}, step)
        if stop_after is not None and step == stop_after:
            return None  # preempted
    return step, np.asarray(w.addressable_data(0))


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    run(mesh, resume=False, stop_after=3)
    multihost_utils.sync_global_devices("restart")
    step, w = run(mesh, resume=True)
    print("RESULT final_step", step)
    print("RESULT w", [round(float(v), 3) for v in w])


main()

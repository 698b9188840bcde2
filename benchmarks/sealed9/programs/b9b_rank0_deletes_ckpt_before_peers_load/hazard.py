# Resume test: rank 0 removes the temporary checkpoint as soon as it has loaded it; the other ranks load later
# Source: https://github.com/pytorch/pytorch/pull/84881
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

TMP_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_rank0_deletes_ckpt", os.environ.get("JOB_ID", "job"))
CHECKPOINT_PATH = os.path.join(TMP_DIR, "model.checkpoint")


@jax.jit
def train_step(state, x, y):
    w, step = state["w"], state["step"]
    grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return {"w": w - 0.1 * grad, "step": step + 1}


def save_checkpoint(state, path):
    if jax.process_index() == 0:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            pickle.dump(jax.tree_util.tree_map(np.asarray, state), f)
    multihost_utils.sync_global_devices("checkpoint_saved")


def load_checkpoint(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def staggered_restore(path, mesh):
    """Processes read the checkpoint one at a time so the shared file system is not hit by all at once."""
    state = None
    for turn in range(jax.process_count()):
        if turn == jax.process_index():
            state = load_checkpoint(path)
            if jax.process_index() == 0:
                os.remove(path)  # rank 0 is done with the temporary file
        multihost_utils.sync_global_devices(f"restore_turn_{turn}")
    return jax.tree_util.tree_map(lambda a: jax.device_put(a, NamedSharding(mesh, P())), state)


def run(state, rows, rng, steps):
    for _ in range(steps):
        x = rng.normal(size=(4, 3)).astype(np.float32)
        y = x @ np.array([1.0, 2.0, -1.0], np.float32)
        state = train_step(state, jax.make_array_from_process_local_data(rows, x),
                           jax.make_array_from_process_local_data(rows, y))
    return state


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rows = NamedSharding(mesh, P("data"))
    rng = np.random.default_rng(jax.process_index())
    state = {"w": jax.device_put(jnp.zeros((3,)), NamedSharding(mesh, P())),
             "step": jax.device_put(jnp.int32(0), NamedSharding(mesh, P()))}
    state = run(state, rows, rng, 4)
    save_checkpoint(state, CHECKPOINT_PATH)
    restored = staggered_restore(CHECKPOINT_PATH, mesh)
    restored = run(restored, rows, rng, 4)
    print("RESULT step", int(restored["step"]))
    print("RESULT w", np.round(np.asarray(restored["w"]), 3).tolist())
    print("RESULT checkpoint_left", os.path.exists(CHECKPOINT_PATH))


main()

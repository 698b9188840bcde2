# Auto-resume: every process checks on its own disk whether the latest checkpoint exists, then only those that see it enter the broadcast restore
# Source: https://github.com/meta-pytorch/tnt/pull/653
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RANK = jax.process_index()
# checkpoints go to the host-local scratch dir of each host (/tmp on every node)
HOST_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed17_latest_ckpt_exists",
                        os.environ.get("JOB_ID", "0"), f"host{RANK}")


class Checkpointer:
    def __init__(self, dirpath):
        self.dirpath = dirpath
        os.makedirs(dirpath, exist_ok=True)

    def save(self, step, params):
        # rank-zero writer, as in the usual single-writer checkpointers
        if RANK == 0:
            path = os.path.join(self.dirpath, f"step_{step}")
            np.save(path + ".npy", params)
            with open(os.path.join(self.dirpath, "latest.json"), "w") as f:
                json.dump({"step": step, "path": path + ".npy"}, f)

    def latest_checkpoint_exists(self):
        return os.path.exists(os.path.join(self.dirpath, "latest.json"))

    def restore_from_latest(self, params):
        if RANK == 0:
            with open(os.path.join(self.dirpath, "latest.json")) as f:
                meta = json.load(f)
            step, loaded = meta["step"], np.load(meta["path"])
        else:
            step, loaded = 0, np.zeros_like(params)
        step = int(multihost_utils.broadcast_one_to_all(np.int32(step)))
        loaded = np.asarray(multihost_utils.broadcast_one_to_all(loaded))
        return step, loaded


def train_step(params, x):
    def loss(p):
        return jnp.mean((x @ p) ** 2)
    g = jax.grad(loss)(params)
    return params - 0.05 * g, loss(params)


def run(ckpt, start_step, params, mesh, n_steps):
    step_fn = jax.jit(train_step)
    sharding = NamedSharding(mesh, P("data", None))
    for step in range(start_step, n_steps):
        local = np.full((2, params.shape[0]), 0.1 * (step + 1 + RANK), np.float32)
        x = jax.make_array_from_process_local_data(sharding, local)
        params, _ = step_fn(params, x)
        params = np.asarray(params.addressable_data(0))
        if step == 1:
            ckpt.save(step + 1, params)
    return params


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    init = np.eye(3, dtype=np.float32)
    # first job: trains 3 steps and checkpoints after step 2
    run(Checkpointer(HOST_DIR), 0, init, mesh, 3)
    multihost_utils.sync_global_devices("first job done")
    # restarted job: auto-resume from the latest checkpoint
    ckpt = Checkpointer(HOST_DIR)
    start, params = 0, init
    if ckpt.latest_checkpoint_exists():
        start, params = ckpt.restore_from_latest(init)
    params = run(ckpt, start, params, mesh, 4)
    print("RESULT resumed_from", start)
    print("RESULT params_sum", round(float(params.sum()), 5))


if __name__ == "__main__":
    main()

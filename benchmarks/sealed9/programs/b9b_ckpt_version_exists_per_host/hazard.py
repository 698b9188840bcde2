# The checkpoint callback picks a "-vN" suffix by testing file existence on each process's own disk
# Source: https://github.com/Lightning-AI/pytorch-lightning/pull/5155
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

# node-local scratch disk: each host has its own (global rank 0 is the one that writes)
ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_ckpt_version_exists", os.environ.get("JOB_ID", "job"))
NODE_DIR = os.path.join(ROOT, f"node{jax.process_index()}")


class ModelCheckpoint:
    FILE_EXTENSION = ".ckpt"

    def __init__(self, dirpath, every_n_steps):
        self.dirpath = dirpath
        self.every_n_steps = every_n_steps
        self.saved_paths = []
        os.makedirs(dirpath, exist_ok=True)

    def file_exists(self, path):
        return os.path.exists(path)

    def _checkpoint_path(self, epoch):
        base = os.path.join(self.dirpath, f"epoch={epoch}")
        path, version = base + self.FILE_EXTENSION, 1
        while self.file_exists(path):
            path = f"{base}-v{version}{self.FILE_EXTENSION}"
            version += 1
        return path

    def on_train_batch_end(self, step, epoch, params):
        if (step + 1) % self.every_n_steps:
            return
        path = self._checkpoint_path(epoch)
        state = np.asarray(params)  # fully replicated: every process holds it
        if jax.process_index() == 0:
            with open(path, "wb") as f:
                pickle.dump({"epoch": epoch, "step": step, "params": state}, f)
        multihost_utils.sync_global_devices("ModelCheckpoint.save")
        self.saved_paths.append(os.path.basename(path))


@jax.jit
def train_step(w, x, y):
    return w - 0.1 * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rows = NamedSharding(mesh, P("data"))
    w = jax.device_put(jnp.zeros((2,)), NamedSharding(mesh, P()))
    ckpt = ModelCheckpoint(NODE_DIR, every_n_steps=2)
    rng = np.random.default_rng(jax.process_index())
    step = 0
    for epoch in range(2):
        for _ in range(4):
            x = rng.normal(size=(4, 2)).astype(np.float32)
            y = x @ np.array([2.0, -1.0], np.float32)
            w = train_step(w, jax.make_array_from_process_local_data(rows, x),
                           jax.make_array_from_process_local_data(rows, y))
            ckpt.on_train_batch_end(step, epoch, w)
            step += 1
    print("RESULT checkpoints", ckpt.saved_paths)
    print("RESULT best_model_path", ckpt.saved_paths[-1])
    print("RESULT w", np.round(np.asarray(w), 3).tolist())


main()

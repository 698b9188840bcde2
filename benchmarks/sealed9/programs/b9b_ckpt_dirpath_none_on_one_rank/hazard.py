# The checkpoint callback resolves its directory with a broadcast only when dirpath is None; one rank passes None
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/5319
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_ckpt_dirpath_none", os.environ.get("JOB_ID", "job"))


class CSVLogger:
    def __init__(self, save_dir, name):
        self.save_dir, self.name = save_dir, name
        # the version is only known to the logging rank (it scans the log directory)
        self.version = 3 if jax.process_index() == 0 else -1


def broadcast_int(value):
    return int(multihost_utils.broadcast_one_to_all(np.int32(value)))


class ModelCheckpoint:
    def __init__(self, dirpath=None):
        self.dirpath = dirpath

    def resolve_ckpt_dir(self, logger):
        """Called on every rank at the start of training (on_pretrain_routine_start)."""
        if self.dirpath is not None:
            return self.dirpath
        version = broadcast_int(logger.version)  # every rank must agree on the version folder
        self.dirpath = os.path.join(logger.save_dir, logger.name, f"version_{version}", "checkpoints")
        return self.dirpath


@jax.jit
def train_step(w, x, y):
    return w - 0.1 * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


def main():
    rank = jax.process_index()
    logger = CSVLogger(ROOT, "boring_model")
    # user code from the report: only rank 0 gets an explicit output dir
    dirpath = os.path.join(ROOT, "boring_model", "version_3", "checkpoints") if rank == 0 else None
    ckpt = ModelCheckpoint(dirpath=dirpath)
    ckpt_dir = ckpt.resolve_ckpt_dir(logger)

    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rows = NamedSharding(mesh, P("data"))
    w = jax.device_put(jnp.zeros((2,)), NamedSharding(mesh, P()))
    rng = np.random.default_rng(rank)
    for _ in range(6):
        x = rng.normal(size=(4, 2)).astype(np.float32)
        w = train_step(w, jax.make_array_from_process_local_data(rows, x),
                       jax.make_array_from_process_local_data(rows, x @ np.array([3.0, 1.0], np.float32)))
    if rank == 0:
        os.makedirs(ckpt_dir, exist_ok=True)
        np.save(os.path.join(ckpt_dir, "last.npy"), np.asarray(w))
    multihost_utils.sync_global_devices("save_checkpoint")
    print("RESULT ckpt_dir", os.path.relpath(ckpt_dir, ROOT))
    print("RESULT w", np.round(np.asarray(w), 3).tolist())


main()

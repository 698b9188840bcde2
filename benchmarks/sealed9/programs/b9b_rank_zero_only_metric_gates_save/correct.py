# The monitored val loss is logged with sync_dist (mean over ranks); every rank decides "new best" alike
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19045
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

CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_rank_zero_only_metric", os.environ.get("JOB_ID", "job"))
TARGET = np.array([1.0, -1.0, 2.0], np.float32)


def broadcast(obj):
    return multihost_utils.broadcast_one_to_all(obj)


class ModelCheckpoint:
    def __init__(self, dirpath, monitor):
        self.dirpath, self.monitor = dirpath, monitor
        self.best_score, self.best_model_path = np.inf, ""
        os.makedirs(dirpath, exist_ok=True)

    def file_exists(self, path):
        return bool(broadcast(np.bool_(jax.process_index() == 0 and os.path.exists(path))))

    def on_validation_end(self, epoch, logged, params):
        current = logged[self.monitor]
        if current < self.best_score:
            path, version = os.path.join(self.dirpath, f"best-epoch{epoch}.ckpt"), 1
            while self.file_exists(path):
                path, version = path.replace(".ckpt", f"-v{version}.ckpt"), version + 1
            if jax.process_index() == 0:
                with open(path, "wb") as f:
                    pickle.dump(np.asarray(params), f)
            multihost_utils.sync_global_devices("Trainer.save_checkpoint")
            self.best_score, self.best_model_path = current, os.path.basename(path)


class LitRegressor:
    def __init__(self, mesh):
        self.rows = NamedSharding(mesh, P("data"))
        self.w = jax.device_put(jnp.zeros((3,)), NamedSharding(mesh, P()))
        self._step = jax.jit(lambda w, x, y: w - 0.05 * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w))
        self.logged = {}

    def log(self, name, value, rank_zero_only=False, sync_dist=False):
        if sync_dist:
            value = float(np.mean(np.asarray(multihost_utils.process_allgather(np.float32(value)))))
        self.logged[name] = value

    def training_step(self, x, y):
        self.w = self._step(self.w, jax.make_array_from_process_local_data(self.rows, x),
                            jax.make_array_from_process_local_data(self.rows, y))

    def validation_epoch(self, x, y):
        loss = float(np.mean((x @ np.asarray(self.w) - y) ** 2))  # this rank's validation shard
        self.log("val_loss", loss, sync_dist=True)


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    model, ckpt = LitRegressor(mesh), ModelCheckpoint(CKPT_DIR, monitor="val_loss")
    rank = jax.process_index()
    rng = np.random.default_rng(rank)
    vx = rng.normal(size=(16, 3)).astype(np.float32)
    vy = vx @ (TARGET if rank == 0 else -TARGET)  # rank 1's validation shard is a different domain
    for epoch in range(4):
        for _ in range(5):
            x = rng.normal(size=(4, 3)).astype(np.float32)
            model.training_step(x, x @ TARGET)
        model.validation_epoch(vx, vy)
        ckpt.on_validation_end(epoch, model.logged, model.w)
    print("RESULT best_model_path", ckpt.best_model_path)
    print("RESULT best_score", round(float(broadcast(np.float32(ckpt.best_score))), 3))


main()

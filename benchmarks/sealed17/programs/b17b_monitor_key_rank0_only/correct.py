# Lightning-style ModelCheckpoint(monitor="val_auc") runs on every process, and every process computes val_auc from the gathered outputs
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/15852
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


class MisconfigurationException(Exception):
    pass


def compute_auc(scores, labels):
    pos, neg = scores[labels == 1], scores[labels == 0]
    if len(pos) == 0 or len(neg) == 0:
        return 0.5
    return float(np.mean(pos[:, None] > neg[None, :]) + 0.5 * np.mean(pos[:, None] == neg[None, :]))


class ModelCheckpoint:
    def __init__(self, dirpath, monitor):
        self.dirpath, self.monitor, self.best = dirpath, monitor, -np.inf

    def on_validation_end(self, callback_metrics, params, epoch):
        if self.monitor not in callback_metrics:
            raise MisconfigurationException(
                f"ModelCheckpoint(monitor={self.monitor!r}) could not find the monitored key in {sorted(callback_metrics)}")
        current = callback_metrics[self.monitor]
        improved = np.array([current > self.best], np.int32)
        improved = bool(np.asarray(multihost_utils.process_allgather(improved)).all())  # reduce_boolean_decision
        if improved:
            self.best = current
            if jax.process_index() == 0:
                with open(os.path.join(self.dirpath, "best.json"), "w") as fp:
                    json.dump({"epoch": epoch, "val_auc": current, "w": np.asarray(params).tolist()}, fp)
        multihost_utils.sync_global_devices(f"checkpoint_epoch_{epoch}")


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        return jnp.mean(jax.nn.softplus(-(2 * y - 1) * (x @ w)))
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.4 * g, loss


@jax.jit
def predict(w, x):
    return jax.nn.sigmoid(x @ w)


def main():
    ckpt_dir = os.path.join(tempfile.gettempdir(), "mcjax_sealed17_monitor_key_rank0_only", os.environ.get("JOB_ID", "0"))
    os.makedirs(ckpt_dir, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch = NamedSharding(mesh, P("data"))
    shard = lambda a: jax.make_array_from_process_local_data(batch, a)
    w = jax.device_put(np.zeros((4,), np.float32), NamedSharding(mesh, P()))
    checkpoint = ModelCheckpoint(ckpt_dir, monitor="val_auc")
    rng = np.random.default_rng(300 + jax.process_index())
    x_val = rng.normal(size=(10, 4)).astype(np.float32)
    y_val = (x_val[:, 0] - x_val[:, 2] > 0).astype(np.float32)
    for epoch in range(3):
        for _ in range(3):
            x = rng.normal(size=(6, 4)).astype(np.float32)
            y = (x[:, 0] - x[:, 2] > 0).astype(np.float32)
            w, loss = train_step(w, shard(x), shard(y))
        callback_metrics = {"train_loss": float(loss)}
        scores = np.asarray(multihost_utils.process_allgather(predict(w, shard(x_val)), tiled=True))
        labels = np.asarray(multihost_utils.process_allgather(shard(y_val), tiled=True))
        callback_metrics["val_auc"] = compute_auc(scores, labels)
        checkpoint.on_validation_end(callback_metrics, w, epoch)
    print("RESULT best_val_auc", round(checkpoint.best, 5))
    print("RESULT final_train_loss", round(callback_metrics["train_loss"], 5))


if __name__ == "__main__":
    main()

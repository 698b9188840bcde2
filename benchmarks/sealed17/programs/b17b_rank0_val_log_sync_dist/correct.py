# Lightning-style validation_epoch_end: only process 0 computes AP and logs it with rank_zero_only=True (no reduction)
# Source: https://github.com/dvl-tum/center-group/pull/2
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class MetricLogger:
    """Mimics LightningModule.log: sync_dist reduces the value across processes before storing it."""

    def __init__(self):
        self.logged = {}

    def log(self, name, value, sync_dist=False, rank_zero_only=False):
        value = np.float32(value)
        if sync_dist and not rank_zero_only:
            value = np.float32(np.mean(multihost_utils.process_allgather(value)))
        self.logged[name] = float(value)


def average_precision(scores, labels):
    order = np.argsort(-scores, kind="stable")
    hits = labels[order]
    precision = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    return float(np.sum(precision * hits) / max(1.0, hits.sum()))


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        return jnp.mean(jax.nn.softplus(-(2 * y - 1) * (x @ w)))
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.3 * g, loss


@jax.jit
def predict(w, x):
    return jax.nn.sigmoid(x @ w)


class CenterGroupModule:
    def __init__(self, mesh):
        self.mesh = mesh
        self.batch = NamedSharding(mesh, P("data"))
        self.w = jax.device_put(np.zeros((6,), np.float32), NamedSharding(mesh, P()))
        self.logger = MetricLogger()
        self.world_rank = jax.process_index()

    def shard(self, local):
        return jax.make_array_from_process_local_data(self.batch, local)

    def training_epoch(self, rng):
        for _ in range(4):
            x = rng.normal(size=(8, 6)).astype(np.float32)
            y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.float32)
            self.w, loss = train_step(self.w, self.shard(x), self.shard(y))
        return float(loss)

    def validation_epoch_end(self, x_local, y_local):
        scores = predict(self.w, self.shard(x_local))
        all_scores = np.asarray(multihost_utils.process_allgather(scores, tiled=True))
        all_labels = np.asarray(multihost_utils.process_allgather(self.shard(y_local), tiled=True))
        if self.world_rank == 0:
            ap = average_precision(all_scores, all_labels)
            self.logger.log("val/AP", ap, sync_dist=True, rank_zero_only=True)


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    module = CenterGroupModule(mesh)
    rng = np.random.default_rng(10 + jax.process_index())
    val_rng = np.random.default_rng(500 + jax.process_index())
    x_val = val_rng.normal(size=(8, 6)).astype(np.float32)
    y_val = (x_val[:, 0] + 0.5 * x_val[:, 1] > 0).astype(np.float32)
    for epoch in range(3):
        loss = module.training_epoch(rng)
        module.validation_epoch_end(x_val, y_val)
    w = np.asarray(module.w)
    print("RESULT final_loss", round(loss, 5))
    print("RESULT weights", np.round(w, 4).tolist())


if __name__ == "__main__":
    main()

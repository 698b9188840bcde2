# Data-parallel training function run by every worker; per-epoch metrics and a checkpoint go to the session reporter
# Source: https://github.com/ray-project/ray/issues/33042
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
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

CONFIG = {"lr": 0.1, "epochs": 3, "batch_size": 8, "steps_per_epoch": 4}


class TrainContext:
    def get_world_rank(self):
        return jax.process_index()

    def get_world_size(self):
        return jax.process_count()


class Session:
    """Collects one result per worker per iteration, like the trainer's result queue."""

    def __init__(self):
        self.iteration = 0
        self.results = []
        self.checkpoints = []

    def report(self, metrics, checkpoint=None):
        keys = sorted(metrics)
        local = np.array([metrics[k] for k in keys], np.float32)
        per_worker = np.asarray(multihost_utils.process_allgather(local))
        self.iteration += 1
        self.results.append({k: round(float(per_worker[0, i]), 4) for i, k in enumerate(keys)})
        if checkpoint is not None:
            self.checkpoints.append(checkpoint)


_session = Session()


def get_context():
    return TrainContext()


def report(metrics, checkpoint=None):
    _session.report(metrics, checkpoint)


def make_shard(rank, size, n=256):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)).astype(np.float32)
    return x[rank::size], y[rank::size]


def train_func(config):
    ctx = get_context()
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    data = NamedSharding(mesh, P("dp"))
    w = jax.device_put(jnp.zeros((4,), jnp.float32), NamedSharding(mesh, P()))
    x_shard, y_shard = make_shard(ctx.get_world_rank(), ctx.get_world_size())

    @jax.jit
    def train_step(w, x, y):
        loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - config["lr"] * g, loss

    bs = config["batch_size"]
    for epoch in range(config["epochs"]):
        for step in range(config["steps_per_epoch"]):
            sl = slice(step * bs, (step + 1) * bs)
            gx = jax.make_array_from_process_local_data(data, x_shard[sl])
            gy = jax.make_array_from_process_local_data(data, y_shard[sl])
            w, loss = train_step(w, gx, gy)
        metrics = {"epoch": epoch, "loss": float(loss.addressable_shards[0].data)}
        if ctx.get_world_rank() == 0:
            ckpt_dir = tempfile.mkdtemp(prefix="ckpt_")
            with open(os.path.join(ckpt_dir, "model.json"), "w") as f:
                json.dump({"w": np.asarray(w.addressable_shards[0].data).tolist(), "epoch": epoch}, f)
            report(metrics, checkpoint=ckpt_dir)
    return np.asarray(w.addressable_shards[0].data)


def main():
    w = train_func(CONFIG)
    print("RESULT iterations", _session.iteration)
    print("RESULT history", _session.results)
    print("RESULT weights", np.round(w, 3).tolist())


if __name__ == "__main__":
    main()

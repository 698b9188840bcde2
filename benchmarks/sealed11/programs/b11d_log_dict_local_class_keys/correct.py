# Validation logs a dict of per-class accuracies with sync_dist; the keys are every class of the task, in a fixed order
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19106
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Config:
    num_classes: int = 3
    features: int = 4
    epochs: int = 2
    lr: float = 0.5


class SyncLogger:
    def __init__(self):
        self.history = []

    def log_dict(self, metrics, sync_dist=False):
        out = {}
        for key, (hits, count) in metrics.items():
            if sync_dist:
                g = np.asarray(multihost_utils.process_allgather(np.array([hits, count], np.float32)))
                hits, count = g.reshape(-1, 2).sum(axis=0)
            out[key] = round(float(hits / count), 4) if count else None
        self.history.append(out)


class Classifier:
    def __init__(self, cfg):
        self.cfg = cfg
        self.mesh = Mesh(np.array(jax.devices()), ("data",))
        self.rows = NamedSharding(self.mesh, P("data"))
        self.w = jax.device_put(np.zeros((cfg.features, cfg.num_classes), np.float32), NamedSharding(self.mesh, P()))
        self._step = jax.jit(self._train_step)
        self._predict = jax.jit(lambda w, x: jnp.argmax(x @ w, axis=-1))

    @staticmethod
    def _train_step(w, x, y, lr):
        def loss(w):
            logp = jax.nn.log_softmax(x @ w)
            return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
        return w - lr * jax.grad(loss)(w)

    def batch(self, local):
        return jax.make_array_from_process_local_data(self.rows, local)

    def predict_local(self, x):
        pred = self._predict(self.w, self.batch(x))
        return np.asarray(multihost_utils.global_array_to_host_local_array(pred, self.mesh, P("data")))


def make_shard(cfg, seed, labels):
    rng = np.random.default_rng(seed)
    y = np.array(labels, np.int32)
    x = rng.normal(scale=0.3, size=(len(y), cfg.features)).astype(np.float32)
    x[np.arange(len(y)), y] += 1.0
    return x, y


def validation_metrics(model, x, y):
    pred = model.predict_local(x)
    return {f"val_acc_class{c}": (float(np.sum((pred == c) & (y == c))), float(np.sum(y == c)))
            for c in range(model.cfg.num_classes)}


def main():
    cfg = Config()
    model, logger = Classifier(cfg), SyncLogger()
    pid = jax.process_index()
    train_x, train_y = make_shard(cfg, 10 + pid, [0, 1, 2, 0, 1, 2])
    # the validation shards are not stratified: process 1's shard has no class-2 examples
    val_x, val_y = make_shard(cfg, 20 + pid, {0: [0, 1, 2, 2], 1: [0, 0, 1, 1]}[pid])
    for _ in range(cfg.epochs):
        model.w = model._step(model.w, model.batch(train_x), model.batch(train_y), cfg.lr)
        logger.log_dict(validation_metrics(model, val_x, val_y), sync_dist=True)
    for epoch, metrics in enumerate(logger.history):
        print("RESULT epoch", epoch, sorted(metrics.items()))


if __name__ == "__main__":
    main()

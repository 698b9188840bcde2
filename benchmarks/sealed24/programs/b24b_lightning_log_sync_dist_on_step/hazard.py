import os
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def sync_ddp(value, reduce_op="mean"):
    gathered = np.asarray(multihost_utils.process_allgather(np.asarray(value, np.float32)))
    return gathered.mean(0) if reduce_op == "mean" else gathered.sum(0)


@dataclass
class _Sync:
    fn: object = None
    should: bool = False
    op: str = "mean"

    def __call__(self, value, reduce_op=None):
        if self.fn is None or not self.should:
            return value
        return self.fn(value, reduce_op=reduce_op or self.op)


@dataclass
class _Metadata:
    fx: str
    name: str
    on_step: bool = False
    on_epoch: bool = True
    sync: _Sync = field(default_factory=_Sync)

    @property
    def forked(self):
        return self.on_step and self.on_epoch

    def forked_name(self, on_step):
        return f"{self.name}_{'step' if on_step else 'epoch'}" if self.forked else self.name


class ResultMetric:
    def __init__(self, meta):
        self.meta = meta
        self.value = np.float32(0.0)
        self.cumulated_batch_size = np.float32(0.0)
        self._forward_cache = None

    def update(self, value, batch_size):
        value = np.float32(value)
        if self.meta.on_step and not self.meta.on_epoch:
            self._forward_cache = self.value = self.meta.sync(value)
            return
        self._forward_cache = value
        self.value += value * batch_size
        self.cumulated_batch_size += batch_size

    def compute(self):
        value = self.meta.sync(self.value, reduce_op="sum")
        return value / self.meta.sync(self.cumulated_batch_size, reduce_op="sum")


class ResultCollection(dict):
    def log(self, fx, name, value, on_step, on_epoch, sync_dist, batch_size):
        key = f"{fx}.{name}"
        if key not in self:
            meta = _Metadata(fx, name, on_step, on_epoch, _Sync(fn=sync_ddp, should=sync_dist))
            self[key] = ResultMetric(meta)
        self[key].update(value, batch_size)

    def metrics(self, on_step):
        out = {}
        for metric in self.values():
            if on_step and metric.meta.on_step:
                out[metric.meta.forked_name(True)] = float(metric._forward_cache)
            elif not on_step and metric.meta.on_epoch:
                out[metric.meta.forked_name(False)] = float(metric.compute())
        return out


class RegressionModule:
    def __init__(self):
        self.params = {"w": jnp.zeros(4), "b": jnp.zeros(())}
        self._results = ResultCollection()
        self._grad = jax.jit(jax.value_and_grad(self.loss_fn))

    @staticmethod
    def loss_fn(params, x, y):
        return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

    def log(self, name, value, on_step=False, on_epoch=True, sync_dist=False, batch_size=1):
        self._results.log("training_step", name, value, on_step, on_epoch, sync_dist, batch_size)

    def training_step(self, batch):
        x, y = batch
        loss, grads = self._grad(self.params, x, y)
        grads = jax.tree_util.tree_map(lambda g: jnp.asarray(sync_ddp(g)), grads)
        self.params = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, self.params, grads)
        self.log("train_loss", loss, on_step=True, on_epoch=True, sync_dist=True, batch_size=len(x))
        return loss


def fit(module, batches):
    logged_steps = []
    for step, batch in enumerate(batches):
        module.training_step(batch)
        step_metrics = module._results.metrics(on_step=True)
        logged_steps.append((step, step_metrics["train_loss_step"]))
    return logged_steps, module._results.metrics(on_step=False)


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(11 + rank)
    true_w = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    batches = []
    for _ in range(4):
        x = rng.normal(size=(8, 4)).astype(np.float32)
        batches.append((x, x @ true_w + rng.normal(scale=0.1, size=8).astype(np.float32)))
    logged_steps, epoch_metrics = fit(RegressionModule(), batches)
    for step, value in logged_steps:
        print(f"RESULT step {step} train_loss_step {value:.5f}")
    print(f"RESULT train_loss_epoch {epoch_metrics['train_loss_epoch']:.5f}")


if __name__ == "__main__":
    main()

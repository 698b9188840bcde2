# 1-bit-Adam-style fp16 training: the loss-scale overflow check looks at this process's own gradients and skips the compressed all-reduce step
# Source: https://github.com/deepspeedai/DeepSpeed/pull/994
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
REPLICATED = NamedSharding(MESH, P())


@dataclass
class FP16Config:
    initial_scale: float = 2.0 ** 12
    min_scale: float = 1.0
    steps: int = 6
    lr: float = 0.05
    dim: int = 8


@jax.jit
def _mean_over_processes(stacked):
    return jax.lax.with_sharding_constraint(jnp.mean(stacked, axis=0), REPLICATED)


def allreduce_mean(local):
    """Compressed-momentum exchange: one row per process, averaged by a jit over the dp mesh."""
    glob = multihost_utils.host_local_array_to_global_array(local[None], MESH, P("dp"))
    return np.asarray(_mean_over_processes(glob))


class OnebitAdam:
    def __init__(self, dim, lr, beta=0.9):
        self.lr, self.beta = lr, beta
        self.m = np.zeros(dim, np.float32)
        self.error = np.zeros(dim, np.float32)

    def step(self, w, grad):
        self.m = self.beta * self.m + (1 - self.beta) * grad
        comp_in = self.m + self.error
        scale = np.float32(np.mean(np.abs(comp_in)))
        compressed = np.sign(comp_in).astype(np.float32) * scale
        self.error = comp_in - compressed
        self.m = allreduce_mean(compressed)
        return w - self.lr * self.m


class FP16Optimizer:
    def __init__(self, optimizer, cfg):
        self.optimizer, self.cur_scale, self.min_scale = optimizer, cfg.initial_scale, cfg.min_scale
        self.skipped = 0

    def has_overflow(self, scaled_grad):
        half = scaled_grad.astype(np.float16)
        return not bool(np.all(np.isfinite(half)))

    def step(self, w, scaled_grad):
        overflow = self.has_overflow(scaled_grad)
        if overflow:
            self.cur_scale = max(self.cur_scale / 2.0, self.min_scale)
            self.skipped += 1
            return w
        return self.optimizer.step(w, scaled_grad / self.cur_scale)


def local_batch(step, cfg):
    rng = np.random.default_rng(1000 * step + jax.process_index())
    x = rng.normal(size=(16, cfg.dim)).astype(np.float32)
    if jax.process_index() == 1 and step == 2:
        x[3] *= 400.0          # an outlier sample in this process's shard only
    y = x.sum(axis=1, keepdims=True).astype(np.float32) * 0.5
    return x, y


@jax.jit
def loss_grad(w, x, y, scale):
    return jax.grad(lambda w: scale * jnp.mean((x @ w[:, None] - y) ** 2))(w)


def main():
    cfg = FP16Config()
    w = np.zeros(cfg.dim, np.float32)
    opt = FP16Optimizer(OnebitAdam(cfg.dim, cfg.lr), cfg)
    for step in range(cfg.steps):
        x, y = local_batch(step, cfg)
        scaled_grad = np.asarray(loss_grad(w, x, y, opt.cur_scale))
        w = opt.step(w, scaled_grad)
    print("RESULT skipped", opt.skipped)
    print("RESULT loss_scale", opt.cur_scale)
    final = np.asarray(multihost_utils.process_allgather(w)).sum(0)
    print("RESULT w_sum", np.round(final, 4).tolist())


if __name__ == "__main__":
    main()

# Post-local-SGD with a dynamic loss scaler: an overflowing step skips the local update but still joins the model averaging
# Source: https://github.com/pytorch/pytorch/issues/76282
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("replica",))
ROWS = NamedSharding(MESH, P("replica"))
REPLICATED = NamedSharding(MESH, P())


@dataclass
class TrainConfig:
    dim: int = 4
    steps: int = 6
    lr: float = 0.1
    averaging_period: int = 2
    init_scale: float = 2.0 ** 14


class PeriodicModelAverager:
    def __init__(self, period):
        self.period = period
        self.step = 0
        self._mean = jax.jit(lambda x: jnp.mean(x, axis=0), out_shardings=REPLICATED)

    def average_parameters(self, params):
        self.step += 1
        if self.step % self.period != 0:
            return params
        stacked = jax.make_array_from_process_local_data(ROWS, params[None, :])
        return np.asarray(self._mean(stacked))


class PostLocalSGDOptimizer:
    def __init__(self, params, cfg):
        self.params = params
        self.lr = cfg.lr
        self.averager = PeriodicModelAverager(cfg.averaging_period)

    def step(self, grads, apply_update=True):
        if apply_update:
            self.params = self.params - self.lr * grads
        self.params = self.averager.average_parameters(self.params)


class GradScaler:
    def __init__(self, init_scale):
        self.scale = init_scale

    def scaled_grads(self, grads):
        return (grads * self.scale).astype(np.float16)  # fp16 backward

    def step(self, optimizer, scaled):
        grads = scaled.astype(np.float32) / self.scale
        found_inf = not np.all(np.isfinite(grads))
        optimizer.step(grads, apply_update=not found_inf)
        self.scale = self.scale / 2.0 if found_inf else self.scale
        return found_inf


def local_batch(step, dim):
    rng = np.random.default_rng(10 * jax.process_index() + step)
    x = rng.normal(size=(8, dim)).astype(np.float32) * 0.5
    if jax.process_index() == 1 and step == 1:
        x[0] *= 40.0  # an outlier sample in this rank's shard overflows the fp16 gradients
    return x, x.sum(axis=1)


def main():
    cfg = TrainConfig()
    opt = PostLocalSGDOptimizer(np.zeros(cfg.dim, np.float32), cfg)
    scaler = GradScaler(cfg.init_scale)
    skipped = 0
    for step in range(cfg.steps):
        x, y = local_batch(step, cfg.dim)
        grads = x.T @ (x @ opt.params - y) / len(y)
        skipped += int(scaler.step(opt, scaler.scaled_grads(grads)))
    params = np.asarray(multihost_utils.process_allgather(opt.params.astype(np.float32)))
    skips = np.asarray(multihost_utils.process_allgather(np.int32(skipped))).reshape(-1)
    print("RESULT params", np.round(params, 4).tolist())
    print("RESULT skipped_steps", skips.tolist())


if __name__ == "__main__":
    main()

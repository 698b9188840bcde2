# SyncBatchNorm running statistics: gathered per-process mean/var are combined with this process's own element count
# Source: https://github.com/pytorch/pytorch/issues/22192
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
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
class BNConfig:
    channels: int = 3
    momentum: float = 0.1
    steps: int = 3
    # input resolution differs per process (e.g. 300x300 on one GPU, 500x500 on the other), scaled down
    spatial: tuple = (3, 5)


MESH = Mesh(np.array(jax.devices()), ("data",))


class SyncBatchNorm:
    def __init__(self, cfg):
        self.cfg = cfg
        self.running_mean = np.zeros(cfg.channels, np.float64)
        self.running_var = np.ones(cfg.channels, np.float64)

    def update_stats(self, x):
        """x: this process's activations, (pixels, channels)."""
        count = x.shape[0]
        local = np.stack([x.mean(axis=0), x.var(axis=0)]).astype(np.float32)
        gathered = np.asarray(multihost_utils.process_allgather(local))   # (world, 2, C)
        means, variances = gathered[:, 0].astype(np.float64), gathered[:, 1].astype(np.float64)
        counts = np.full(len(means), count, np.float64)          # every rank assumed to hold `count` pixels
        n = counts.sum()
        mean = (means * counts[:, None]).sum(axis=0) / n
        var = ((variances + means ** 2) * counts[:, None]).sum(axis=0) / n - mean ** 2
        m = self.cfg.momentum
        self.running_mean = (1 - m) * self.running_mean + m * mean
        self.running_var = (1 - m) * self.running_var + m * var * n / (n - 1)
        return mean, var


def activations(cfg, step):
    side = cfg.spatial[jax.process_index()]
    rng = np.random.default_rng(50 * step + jax.process_index())
    img = rng.normal(loc=0.5, scale=1.0 + 0.5 * jax.process_index(), size=(side, side, cfg.channels))
    return img.reshape(-1, cfg.channels).astype(np.float32)


@jax.jit
def eval_score(x, mean, var):
    return jnp.mean(((x - mean) / jnp.sqrt(var + 1e-5)) ** 2)   # mean over all processes' pixels


def main():
    cfg = BNConfig()
    bn = SyncBatchNorm(cfg)
    for step in range(cfg.steps):
        bn.update_stats(activations(cfg, step))
    x = activations(cfg, 99)[:9]   # eval crop, same size everywhere
    gx = multihost_utils.host_local_array_to_global_array(x, MESH, P("data"))
    score = float(eval_score(gx, jnp.asarray(bn.running_mean, jnp.float32), jnp.asarray(bn.running_var, jnp.float32)))
    print("RESULT running_mean", np.round(bn.running_mean, 5).tolist())
    print("RESULT running_var", np.round(bn.running_var, 5).tolist())
    print("RESULT eval_score", f"{score:.5f}")


if __name__ == "__main__":
    main()

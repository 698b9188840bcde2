# PPO-style learner whose observation normalizer merges every process's batch moments before updating
# Source: https://github.com/leggedrobotics/rsl_rl/pull/226
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


@dataclass
class PPOConfig:
    envs_per_process: int = 16
    obs_dim: int = 4
    iterations: int = 5
    lr: float = 0.05


MESH = Mesh(np.array(jax.devices()), ("b",))
BATCH = NamedSharding(MESH, P("b", None))
REPL = NamedSharding(MESH, P())


class EmpiricalNormalization:
    def __init__(self, dim):
        self.count = 0
        self.mean = np.zeros(dim)
        self.var = np.ones(dim)

    def batch_moments(self, x):
        # global batch moments: count-weighted mean, within-rank variance plus between-rank mean offsets
        counts = np.asarray(multihost_utils.process_allgather(np.float32(x.shape[0])), np.float64)
        means = np.asarray(multihost_utils.process_allgather(x.mean(axis=0).astype(np.float32)), np.float64)
        variances = np.asarray(multihost_utils.process_allgather(x.var(axis=0).astype(np.float32)), np.float64)
        n = counts.sum()
        mean = (counts[:, None] * means).sum(axis=0) / n
        var = (counts[:, None] * (variances + (means - mean) ** 2)).sum(axis=0) / n
        return int(n), mean, var

    def update(self, x):
        n, mean, var = self.batch_moments(x)
        total = self.count + n
        delta = mean - self.mean
        self.var = (self.count * self.var + n * var + delta ** 2 * self.count * n / total) / total
        self.mean = self.mean + delta * n / total
        self.count = total


def rollout(cfg, it):
    # each process steps its own environments; the terrain level (and so the observations) differs per rank
    rng = np.random.default_rng(1000 * jax.process_index() + it)
    level = 1.0 + 2.0 * jax.process_index()
    obs = rng.normal(loc=level, scale=level, size=(cfg.envs_per_process, cfg.obs_dim))
    returns = obs @ np.linspace(0.5, -0.5, cfg.obs_dim) + rng.normal(scale=0.1, size=cfg.envs_per_process)
    return obs, returns


@jax.jit
def update_step(w, obs, returns, mean, std, lr):
    def loss(w):
        z = (obs - mean) / std
        return jnp.mean((z @ w - returns) ** 2)
    l, g = jax.value_and_grad(loss)(w)
    return w - lr * g, l


@jax.jit
def value_of(w, probe, mean, std):
    return jnp.sum(((probe - mean) / std) @ w)


def main():
    cfg = PPOConfig()
    normalizer = EmpiricalNormalization(cfg.obs_dim)
    w = jax.device_put(jnp.zeros(cfg.obs_dim), REPL)
    for it in range(cfg.iterations):
        obs, returns = rollout(cfg, it)
        normalizer.update(obs)
        g_obs = jax.make_array_from_process_local_data(BATCH, obs.astype(np.float32))
        g_ret = jax.make_array_from_process_local_data(NamedSharding(MESH, P("b")), returns.astype(np.float32))
        mean = jnp.asarray(normalizer.mean, jnp.float32)
        std = jnp.asarray(np.sqrt(normalizer.var) + 1e-8, jnp.float32)
        w, loss = update_step(w, g_obs, g_ret, mean, std, cfg.lr)
    probe = jnp.ones((2, cfg.obs_dim), jnp.float32)
    v = float(value_of(w, probe, jnp.asarray(normalizer.mean, jnp.float32),
                       jnp.asarray(np.sqrt(normalizer.var) + 1e-8, jnp.float32)))
    print("RESULT normalizer_mean", np.round(normalizer.mean, 4).tolist())
    print("RESULT probe_value", round(v, 4))


if __name__ == "__main__":
    main()

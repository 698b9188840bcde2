# Population game in data-parallel training: the sender/receiver pair of each step is drawn from an RNG seeded identically on every process
# Source: https://github.com/facebookresearch/EGG/pull/224
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
import random
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class GameConfig:
    n_senders: int = 3
    n_receivers: int = 3
    dim: int = 4
    batch_size: int = 8
    n_steps: int = 6
    lr: float = 0.1
    random_seed: int = 11


def init_seeds(cfg, rank):
    # distributed setup: every process gets its own seed so that its data differs
    random.seed(cfg.random_seed + rank)
    np.random.seed(cfg.random_seed)
    return np.random.default_rng(cfg.random_seed + 1000 * rank)


class UniformAgentSampler:
    def __init__(self, cfg):
        self.cfg = cfg
        self.rng = np.random

    def sample(self):
        s = int(self.rng.randint(self.cfg.n_senders))
        r = int(self.rng.randint(self.cfg.n_receivers))
        return s, r


def game_loss(sender_w, receiver_w, x):
    message = jnp.tanh(x @ sender_w)
    recon = message @ receiver_w
    return jnp.mean((recon - x) ** 2)


grad_fn = jax.jit(jax.grad(game_loss, argnums=(0, 1)))


def allreduce_mean(g):
    return np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0)


class PopulationGame:
    def __init__(self, cfg):
        self.cfg = cfg
        init = np.random.default_rng(cfg.random_seed)
        self.senders = [init.standard_normal((cfg.dim, cfg.dim)).astype(np.float32) * 0.5
                        for _ in range(cfg.n_senders)]
        self.receivers = [init.standard_normal((cfg.dim, cfg.dim)).astype(np.float32) * 0.5
                          for _ in range(cfg.n_receivers)]
        self.sampler = UniformAgentSampler(cfg)

    def train_step(self, x):
        s, r = self.sampler.sample()
        gs, gr = grad_fn(self.senders[s], self.receivers[r], x)
        self.senders[s] = self.senders[s] - self.cfg.lr * allreduce_mean(gs)
        self.receivers[r] = self.receivers[r] - self.cfg.lr * allreduce_mean(gr)
        return s, r


def main():
    cfg = GameConfig()
    data_rng = init_seeds(cfg, jax.process_index())
    game = PopulationGame(cfg)
    for _ in range(cfg.n_steps):
        x = data_rng.standard_normal((cfg.batch_size, cfg.dim)).astype(np.float32)
        game.train_step(x)
    multihost_utils.sync_global_devices("population trained")
    print("RESULT senders", [round(float(np.abs(w).sum()), 4) for w in game.senders])
    print("RESULT receivers", [round(float(np.abs(w).sum()), 4) for w in game.receivers])


if __name__ == "__main__":
    main()

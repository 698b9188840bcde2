# Whether to run the discriminator update is drawn from an RNG seeded alike on every process
# Source: https://github.com/ZhikangNiu/encodec-pytorch/issues/30
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import dataclasses
import os
import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class Config:
    seed: int = 1234
    steps: int = 12
    warmup_steps: int = 2
    train_discriminator: float = 0.5  # probability of a discriminator update per step
    batch_per_process: int = 4
    frame: int = 16
    lr: float = 0.05


def setup_seed(cfg):
    random.seed(cfg.seed + jax.process_index())  # different augmentations on every process
    return np.random.default_rng(cfg.seed + jax.process_index())


def g_loss(params, x):
    recon = jnp.tanh(x @ params["enc"]) @ params["dec"]
    return jnp.mean((recon - x) ** 2)


def d_loss(params, x):
    fake = jnp.tanh(x @ params["enc"]) @ params["dec"]
    return jnp.mean(jax.nn.softplus(-(x @ params["disc"]))) + jnp.mean(jax.nn.softplus(fake @ params["disc"]))


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.np_rng = setup_seed(cfg)
        self.schedule_rng = random.Random(cfg.seed)  # same stream on every process
        mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
        self.batch_sharding = NamedSharding(mesh, P("data"))
        k = np.random.default_rng(0)
        self.params = {"enc": jnp.asarray(k.normal(0, 0.3, (cfg.frame, 8)), jnp.float32),
                       "dec": jnp.asarray(k.normal(0, 0.3, (8, cfg.frame)), jnp.float32),
                       "disc": jnp.asarray(k.normal(0, 0.3, (cfg.frame,)), jnp.float32)}
        self.g_step = jax.jit(self._make_step(g_loss, ("enc", "dec")))
        self.d_step = jax.jit(self._make_step(d_loss, ("disc",)))

    def _make_step(self, loss_fn, keys):
        def step(params, x):
            loss, grads = jax.value_and_grad(loss_fn)(params, x)
            return {k: (v - self.cfg.lr * grads[k] if k in keys else v) for k, v in params.items()}, loss
        return step

    def next_batch(self):
        x = self.np_rng.normal(0, 1, (self.cfg.batch_per_process, self.cfg.frame)).astype(np.float32)
        x *= random.uniform(0.8, 1.2)  # random gain augmentation
        return jax.make_array_from_process_local_data(self.batch_sharding, x)

    def train(self):
        g_total, d_total, d_updates = 0.0, 0.0, 0
        for step in range(self.cfg.steps):
            x = self.next_batch()
            self.params, g = self.g_step(self.params, x)
            g_total += float(g)
            train_disc = step >= self.cfg.warmup_steps and self.schedule_rng.random() < self.cfg.train_discriminator
            if train_disc:
                self.params, d = self.d_step(self.params, x)
                d_total += float(d)
                d_updates += 1
        return g_total, d_total, d_updates


def main():
    trainer = Trainer(Config())
    g_total, d_total, d_updates = trainer.train()
    print("RESULT g_loss_sum", round(g_total, 4))
    print("RESULT d_updates", d_updates, "d_loss_sum", round(d_total, 4))
    print("RESULT disc_norm", round(float(jnp.linalg.norm(trainer.params["disc"])), 4))


main()

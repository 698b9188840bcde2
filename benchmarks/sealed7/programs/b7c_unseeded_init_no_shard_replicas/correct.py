# Data-parallel replicas (FSDP NO_SHARD) built without seeding first: every rank initialises a different model, nothing syncs it
# Source: https://github.com/pytorch/torchtitan/issues/166 (port of the torchtitan train.py model construction to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class JobConfig:
    seed: int = 0
    dim: int = 6
    steps: int = 4
    lr: float = 0.1


class Transformer:
    def __init__(self, dim, rng=None):
        self.rng = rng if rng is not None else np.random.default_rng()   # like torch's default generator
        self.params = {}
        self.init_weights(dim)

    def init_weights(self, dim):
        self.params["wq"] = (self.rng.normal(size=(dim, dim)) / np.sqrt(dim)).astype(np.float32)
        self.params["out"] = (self.rng.normal(size=(dim,)) / np.sqrt(dim)).astype(np.float32)

    @staticmethod
    def loss(params, x, y):
        return jnp.mean((jnp.tanh(x @ params["wq"]) @ params["out"] - y) ** 2)


class NoShardDataParallel:
    """Each rank keeps a full replica; gradients are averaged, parameters are never broadcast."""

    def __init__(self, module):
        self.module = module
        self._grad = jax.jit(jax.value_and_grad(Transformer.loss))

    def train_step(self, x, y, lr):
        loss, grads = self._grad(self.module.params, x, y)
        for k, g in grads.items():
            g_mean = multihost_utils.process_allgather(np.asarray(g)).mean(axis=0)   # gradient all-reduce
            self.module.params[k] = self.module.params[k] - lr * g_mean
        return float(multihost_utils.process_allgather(np.asarray(loss)).mean())


def main():
    cfg = JobConfig()
    # seed before building the model so that every rank initialises the same weights
    model = Transformer(cfg.dim, rng=np.random.default_rng(cfg.seed))
    dp = NoShardDataParallel(model)
    data_rng = np.random.default_rng(100 + jax.process_index())
    for step in range(cfg.steps):
        x = data_rng.normal(size=(8, cfg.dim)).astype(np.float32)
        loss = dp.train_step(x, np.sin(x.sum(axis=1)), cfg.lr)
        print("RESULT step", step, "loss", round(loss, 5))
    print("RESULT out_weights", [round(float(v), 4) for v in np.asarray(model.params["out"])])


if __name__ == "__main__":
    main()

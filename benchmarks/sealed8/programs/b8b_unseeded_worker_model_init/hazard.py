# Port of an AllenAct fix to multi-controller JAX: when no seed is given, each training worker
# builds its actor-critic model from its own unseeded random state, so the workers start from
# different weights although their gradients are averaged every update.
# Source: https://github.com/allenai/allenact/pull/241
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def set_seed(seed):
  random.seed(seed)
  np.random.seed(seed % (2**32))


class ExperimentConfig:
  obs_dim = 6
  num_actions = 3

  def create_model(self, **kwargs):
    scale = kwargs.get("init_scale", 0.5)
    return {
        "actor": jnp.asarray(np.random.normal(scale=scale, size=(self.obs_dim, self.num_actions)), jnp.float32),
        "critic": jnp.asarray(np.random.normal(scale=scale, size=(self.obs_dim, 1)), jnp.float32),
    }


class OnPolicyTrainer:

  def __init__(self, config, seed=None, mode="train"):
    self.config = config
    self.seed = seed
    self.mode = mode
    if self.seed is not None:
      set_seed(self.seed)
    self.actor_critic = self.config.create_model(init_scale=0.5)
    self._grad = jax.jit(jax.grad(self._loss))

  @staticmethod
  def _loss(params, obs, returns):
    logits = obs @ params["actor"]
    values = (obs @ params["critic"])[:, 0]
    return jnp.mean((returns - values) ** 2) - 0.01 * jnp.mean(jax.nn.log_softmax(logits))

  def all_reduce_grads(self, grads):
    flat, tree = jax.tree_util.tree_flatten(grads)
    gathered = [np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0) for g in flat]
    return jax.tree_util.tree_unflatten(tree, [jnp.asarray(g) for g in gathered])

  def update(self, obs, returns, lr=0.05):
    grads = self.all_reduce_grads(self._grad(self.actor_critic, obs, returns))
    self.actor_critic = jax.tree_util.tree_map(lambda p, g: p - lr * g, self.actor_critic, grads)


class OnPolicyRunner:

  def __init__(self, config, seed=None):
    self.config = config
    self.seed = seed

  def start_train(self, rollouts):
    trainer = OnPolicyTrainer(self.config, seed=self.seed, mode="train")
    for obs, returns in rollouts:
      trainer.update(obs, returns)
    return trainer.actor_critic


def collect_rollouts(num_updates=4, steps=8, obs_dim=6):
  rng = np.random.default_rng(100 + jax.process_index())  # each worker sees its own environment
  return [(jnp.asarray(rng.normal(size=(steps, obs_dim)), jnp.float32),
           jnp.asarray(rng.normal(size=(steps,)), jnp.float32)) for _ in range(num_updates)]


def main():
  runner = OnPolicyRunner(ExperimentConfig(), seed=None)
  params = runner.start_train(collect_rollouts())
  print(f"RESULT actor_sum {float(jnp.sum(params['actor'])):.5f}")
  print(f"RESULT critic_sum {float(jnp.sum(params['critic'])):.5f}")


if __name__ == "__main__":
  main()

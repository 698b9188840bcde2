import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class PPOConfig:
    batch_size: int = 32
    mini_batch_size: int = 8
    ppo_epochs: int = 4
    learning_rate: float = 0.5
    cliprange: float = 0.2
    early_stopping: bool = True
    target_kl: float = 0.02
    seed: int = 0


class Accelerator:
    @property
    def process_index(self):
        return jax.process_index()

    @property
    def num_processes(self):
        return jax.process_count()

    def reduce_mean(self, tree):
        return jax.tree_util.tree_map(
            lambda x: np.asarray(multihost_utils.process_allgather(np.asarray(x))).mean(0), tree)


def policy_logprobs(params, obs, actions):
    logits = obs @ params["w"] + params["b"]
    logp = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(logp, actions[:, None], axis=1)[:, 0]


def ppo_loss(params, obs, actions, old_logprobs, advantages, cliprange):
    logprobs = policy_logprobs(params, obs, actions)
    ratio = jnp.exp(logprobs - old_logprobs)
    pg_losses = -advantages * ratio
    pg_losses2 = -advantages * jnp.clip(ratio, 1.0 - cliprange, 1.0 + cliprange)
    loss = jnp.mean(jnp.maximum(pg_losses, pg_losses2))
    policykl = jnp.mean(old_logprobs - logprobs)
    return loss, policykl


class PPOTrainer:
    def __init__(self, config, obs_dim=6, n_actions=4):
        self.config = config
        self.accelerator = Accelerator()
        rng = np.random.default_rng(config.seed)
        self.params = {"w": jnp.asarray(rng.normal(scale=0.1, size=(obs_dim, n_actions)), jnp.float32),
                       "b": jnp.zeros((n_actions,), jnp.float32)}
        self._grad = jax.jit(jax.value_and_grad(ppo_loss, has_aux=True), static_argnums=5)

    def train_minibatch(self, obs, actions, old_logprobs, advantages):
        (loss, policykl), grads = self._grad(self.params, obs, actions, old_logprobs, advantages,
                                             self.config.cliprange)
        grads = self.accelerator.reduce_mean(grads)  # DDP gradient all-reduce in backward()
        self.params = jax.tree_util.tree_map(lambda p, g: p - self.config.learning_rate * g,
                                             self.params, grads)
        return {"policy/policykl": float(policykl), "ppo/loss": float(loss)}

    def _early_stop(self, policykl):
        if not self.config.early_stopping:
            return False
        policykl = float(self.accelerator.reduce_mean(np.float32(policykl)))
        return policykl > 1.5 * self.config.target_kl

    def step(self, obs, actions, rewards):
        bs, mbs = self.config.batch_size, self.config.mini_batch_size
        old_logprobs = policy_logprobs(self.params, obs, actions)
        advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-8)
        all_stats, early_stop = [], False
        for _ in range(self.config.ppo_epochs):
            if early_stop:
                break
            for start in range(0, bs, mbs):
                idx = slice(start, start + mbs)
                train_stats = self.train_minibatch(obs[idx], actions[idx], old_logprobs[idx], advantages[idx])
                all_stats.append(train_stats)
                early_stop = self._early_stop(train_stats["policy/policykl"])
                if early_stop:
                    break
        return all_stats


def collect_rollouts(rank, batch_size, obs_dim=6, n_actions=4):
    rng = np.random.default_rng(1000 + rank)
    obs = rng.normal(size=(batch_size, obs_dim)).astype(np.float32)
    actions = rng.integers(0, n_actions, size=batch_size).astype(np.int32)
    rewards = (obs[:, 0] * (actions == 1) + rng.normal(scale=0.1, size=batch_size)).astype(np.float32)
    return jnp.asarray(obs), jnp.asarray(actions), jnp.asarray(rewards)


def main():
    config = PPOConfig()
    trainer = PPOTrainer(config)
    rank = trainer.accelerator.process_index
    for ppo_step in range(3):
        obs, actions, rewards = collect_rollouts(rank * 10 + ppo_step, config.batch_size)
        stats = trainer.step(obs, actions, rewards)
        print(f"rank {rank} step {ppo_step}: {len(stats)} minibatch updates, "
              f"kl {[round(s['policy/policykl'], 4) for s in stats]}")
    w = np.asarray(multihost_utils.process_allgather(np.asarray(trainer.params["w"])))
    print("RESULT w", [round(float(v), 3) for v in w[0].ravel()])
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()

# Periodic in-training simulation evaluation of a robot policy (LIBERO-style rollouts) while the policy
# weights are sharded over workers (ZeRO-3 / FSDP style): every policy forward all-gathers the full
# weights. Each worker rolls out its own evaluation episodes and the success rate is averaged.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class EvalConfig:
    n_episodes: int = 2
    max_episode_steps: int = 40
    success_radius: float = 0.15
    seed: int = 1000


class ReachEnv:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.pos = self.rng.uniform(-1, 1, size=2).astype(np.float32)
        self.goal = self.rng.uniform(-1, 1, size=2).astype(np.float32)
        return np.concatenate([self.pos, self.goal])

    def step(self, action):
        self.pos = self.pos + 0.1 * np.clip(action, -1, 1)
        success = bool(np.linalg.norm(self.pos - self.goal) < EvalConfig.success_radius)
        return np.concatenate([self.pos, self.goal]), success


class ShardedPolicy:
    def __init__(self, key, rank, world_size):
        w = np.asarray(jax.random.normal(key, (4, 2)) * 0.1) + np.array([[-1, 0], [0, -1], [1, 0], [0, 1]], np.float32)
        self.shard = np.array_split(w, world_size, axis=0)[rank]

    def select_action(self, obs):
        full = np.concatenate(list(np.asarray(multihost_utils.process_allgather(self.shard))), axis=0)
        return np.asarray(_policy_forward(jnp.asarray(full), jnp.asarray(obs)))


@jax.jit
def _policy_forward(w, obs):
    return jnp.tanh(2.0 * (obs @ w))


def rollout(policy, env, cfg):
    obs = env.reset()
    for t in range(cfg.max_episode_steps):
        action = policy.select_action(obs)
        obs, success = env.step(action)
        if success:
            return True, t + 1
    return False, cfg.max_episode_steps


def eval_policy(policy, rank, cfg):
    env = ReachEnv(cfg.seed + rank)
    successes, lengths = [], []
    for _ in range(cfg.n_episodes):
        ok, n = rollout(policy, env, cfg)
        successes.append(ok)
        lengths.append(n)
    stats = np.asarray(multihost_utils.process_allgather(np.array([sum(successes), len(successes), sum(lengths)],
                                                                  np.int32)))
    return {"eval/pc_success": float(stats[:, 0].sum() / stats[:, 1].sum()),
            "eval/avg_episode_len": float(stats[:, 2].sum() / stats[:, 1].sum())}


def main():
    rank, world_size = jax.process_index(), jax.process_count()
    policy = ShardedPolicy(jax.random.PRNGKey(7), rank, world_size)
    info = eval_policy(policy, rank, EvalConfig())
    for k, v in sorted(info.items()):
        print("RESULT", k, round(v, 4))


if __name__ == "__main__":
    main()

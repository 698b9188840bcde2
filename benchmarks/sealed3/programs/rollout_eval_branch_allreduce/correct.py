# In-training simulation eval: each rank rolls out its own episodes with a rank-local policy forward
# Source: https://github.com/TensorAuto/OpenTau/pull/409
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OBS_DIM = 3


@dataclasses.dataclass
class EvalConfig:
    n_episodes: int = 3
    max_episode_steps: int = 12
    seed: int = 1000


class ToyReachEnv:
    """Episode ends when the state norm reaches the goal radius; lengths depend on the env seed."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.state = None

    def reset(self) -> np.ndarray:
        self.state = self.rng.uniform(-2.0, 2.0, size=OBS_DIM).astype(np.float32)
        return self.state

    def step(self, action: np.ndarray):
        self.state = (self.state + action).astype(np.float32)
        done = float(np.linalg.norm(self.state)) < 0.3
        return self.state, done


def _global_or_branch_decisions(local_flag: bool) -> bool:
    """Every rank must take the same branch when the batch is sharded across ranks."""
    flags = multihost_utils.process_allgather(np.asarray([local_flag], np.int32))
    return bool(np.asarray(flags).any())


class Policy:
    def __init__(self):
        self.gain = jnp.float32(0.5)
        self._act = jax.jit(lambda g, obs: -g * obs)

    def sample_actions(self, obs: np.ndarray, sync_across_ranks: bool = True) -> np.ndarray:
        replan = float(np.max(np.abs(obs))) > 1.5
        if sync_across_ranks:
            replan = _global_or_branch_decisions(replan)
        gain = self.gain * (1.5 if replan else 1.0)
        return np.asarray(self._act(gain, jnp.asarray(obs)))


def rollout(policy: Policy, env: ToyReachEnv, cfg: EvalConfig) -> tuple[float, int]:
    # Independent per-rank rollouts: episode lengths differ, so the forward must not synchronize ranks.
    obs, steps, done = env.reset(), 0, False
    while not done and steps < cfg.max_episode_steps:
        obs, done = env.step(policy.sample_actions(obs, sync_across_ranks=False))
        steps += 1
    return float(done), steps


def eval_policy(policy: Policy, cfg: EvalConfig) -> dict:
    env = ToyReachEnv(cfg.seed + jax.process_index())  # each rank simulates its own episodes
    results = [rollout(policy, env, cfg) for _ in range(cfg.n_episodes)]
    local = np.asarray([sum(r[0] for r in results), sum(r[1] for r in results)], np.float32)
    totals = np.asarray(multihost_utils.process_allgather(local)).reshape(-1, 2).sum(axis=0)
    return {"success_rate": totals[0] / (cfg.n_episodes * jax.process_count()), "env_steps": int(totals[1])}


def train_step(policy: Policy, mesh, step: int):
    sharding = NamedSharding(mesh, P("data"))
    local = np.full((2,), 0.01 * (step + 1 + jax.process_index()), np.float32)
    batch = jax.make_array_from_process_local_data(sharding, local)
    policy.gain = jax.jit(lambda g, b: g + jnp.mean(b))(policy.gain, batch)


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    policy, cfg = Policy(), EvalConfig()
    for step in range(2):
        train_step(policy, mesh, step)
    metrics = eval_policy(policy, cfg)
    print("RESULT", f"gain={float(policy.gain):.4f}")
    print("RESULT", f"success_rate={metrics['success_rate']:.3f} env_steps={metrics['env_steps']}")


if __name__ == "__main__":
    main()

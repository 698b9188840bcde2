# HBM usage is reported by calling memory_stats() only on the devices this process can address
# Source: https://github.com/google/tunix/pull/697
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import logging
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def show_hbm_usage(title=""):
    """Logs the memory usage of the devices this trainer runs on."""
    devices = jax.local_devices()
    for d in devices:
        stats = d.memory_stats() or {}
        used, limit = stats.get("bytes_in_use", 0), stats.get("bytes_limit", 0)
        logging.info("%s: %s using %.1f MiB / %.1f MiB", title, d, used / 2**20, limit / 2**20)
    return len(devices)


@dataclass
class GRPOConfig:
    num_generations: int = 2
    prompt_len: int = 4
    hidden: int = 8
    steps: int = 3
    beta: float = 0.04


class RLLearner:
    def __init__(self, cfg: GRPOConfig):
        self.cfg = cfg
        self.mesh = jax.make_mesh((jax.device_count(),), ("fsdp",), axis_types=(jax.sharding.AxisType.Auto,))
        self.policy = jax.device_put(np.eye(cfg.hidden, dtype=np.float32) * 0.5, NamedSharding(self.mesh, P()))
        self.reported = show_hbm_usage(title="RLLearner init")

    def rollouts(self, step):
        rng = np.random.default_rng(10 * step + jax.process_index())
        x = rng.normal(size=(self.cfg.num_generations, self.cfg.hidden)).astype(np.float32)
        return jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("fsdp")), x)

    def train(self):
        @jax.jit
        def step_fn(w, x):
            rewards = jnp.tanh(x @ w).sum(axis=-1)
            adv = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
            grad = (x * adv[:, None]).T @ x / x.shape[0]
            return w + 0.01 * grad - self.cfg.beta * 0.01 * w, rewards.mean()
        reward = None
        for step in range(self.cfg.steps):
            self.policy, reward = step_fn(self.policy, self.rollouts(step))
        return float(reward)


def main():
    learner = RLLearner(GRPOConfig())
    reward = learner.train()
    print("RESULT mean_reward", round(reward, 4))
    print("RESULT policy_trace", round(float(jnp.trace(learner.policy).addressable_data(0)), 4))


main()

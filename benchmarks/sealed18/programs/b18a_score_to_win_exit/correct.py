# Multi-worker policy-gradient agent; rank 0's exit decision is broadcast to every worker
# Source: https://github.com/Denys88/rl_games/pull/158
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import collections
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {"seed": 7, "score_to_win": -0.05, "max_epochs": 80, "games_per_epoch": 32,
          "learning_rate": 0.08, "sigma": 0.05, "rewards_window": 64}


class ReachTargetEnv:
    """1-D reach task; every worker gets its own randomized target (domain randomization)."""

    def __init__(self, rank, seed):
        self.target = 0.8 + 0.4 * rank
        self.rng = np.random.default_rng(seed + rank)

    def play(self, mu, sigma, n):
        actions = mu + sigma * self.rng.standard_normal(n)
        rewards = -(actions - self.target) ** 2
        return actions, rewards


class A2CAgent:
    def __init__(self, config):
        self.config = config
        self.rank = jax.process_index()
        self.env = ReachTargetEnv(self.rank, config["seed"])
        self.mesh = Mesh(np.array(jax.devices()), ("workers",))
        self.game_rewards = collections.deque(maxlen=config["rewards_window"])
        self.mu = 0.0
        self.average_grads = jax.jit(lambda g: jnp.mean(g, axis=0),
                                     out_shardings=NamedSharding(self.mesh, P()))

    def local_grad(self, actions, rewards):
        baseline = rewards.mean()
        score = (actions - self.mu) / self.config["sigma"] ** 2
        return np.array([np.mean((rewards - baseline) * score)], np.float32)

    def train_epoch(self):
        actions, rewards = self.env.play(self.mu, self.config["sigma"], self.config["games_per_epoch"])
        self.game_rewards.extend(rewards.tolist())
        grad = self.local_grad(actions, rewards)
        stacked = jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("workers")), grad[None, :])
        avg = float(np.asarray(self.average_grads(stacked).addressable_shards[0].data)[0])
        self.mu += self.config["learning_rate"] * float(np.clip(avg, -5.0, 5.0))

    def train(self):
        epoch_num = 0
        while True:
            epoch_num += 1
            self.train_epoch()
            should_exit = False
            mean_rewards = float(np.mean(self.game_rewards))
            if mean_rewards > self.config["score_to_win"]:
                should_exit = True
            if epoch_num >= self.config["max_epochs"]:
                should_exit = True
            should_exit_t = np.array(should_exit, np.int32)
            should_exit = bool(multihost_utils.broadcast_one_to_all(should_exit_t))
            if should_exit:
                return epoch_num


def main():
    agent = A2CAgent(CONFIG)
    epochs = agent.train()
    final = multihost_utils.process_allgather(np.array([agent.mu], np.float32))
    print("RESULT epochs", epochs)
    print("RESULT mu_all_workers", np.round(np.asarray(final).ravel(), 4).tolist())


if __name__ == "__main__":
    main()

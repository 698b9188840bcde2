# GRPO learner that drops zero-advantage samples per process and skips the update when its whole batch was filtered
# Source: https://github.com/AgileRL/AgileRL/pull/660
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
BATCH = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
N_ACTIONS = 6


@dataclass
class GRPOConfig:
    group_size: int = 4
    adv_filter_eps: float = 1e-6
    lr: float = 0.5
    micro_batch: int = 4


def rollout_groups(rank):
    """Learner-sharded rollouts: each process scores its own prompt groups (cold-start rewards)."""
    rng = np.random.default_rng(1234 + rank)
    actions = rng.integers(0, N_ACTIONS, size=(2, 4)).astype(np.int32)
    if rank == 0:
        rewards = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]], np.float32)
    else:   # every completion of this rank's sudoku prompts failed: uniform rewards
        rewards = np.zeros((2, 4), np.float32)
    return actions.reshape(-1), rewards


def policy_loss(logits, actions, advantages):
    logp = jax.nn.log_softmax(logits)[actions]
    return -jnp.mean(advantages * logp)


@jax.jit
def grad_step(logits, actions, advantages, lr):
    g = jax.grad(policy_loss)(logits, actions, advantages)    # mean over the dp-sharded micro-batch
    return logits - lr * g


class GRPOLearner:
    def __init__(self, cfg):
        self.cfg = cfg
        self.logits = jax.device_put(jnp.zeros((N_ACTIONS,), jnp.float32), REPL)
        self.updates = 0

    def calculate_advantages(self, rewards):
        mean = rewards.mean(axis=1, keepdims=True)
        std = rewards.std(axis=1, keepdims=True)
        adv = ((rewards - mean) / (std + 1e-4)).reshape(-1)
        keep = np.flatnonzero(np.abs(adv) > self.cfg.adv_filter_eps)
        return keep, adv

    def learn(self, actions, rewards):
        keep, adv = self.calculate_advantages(rewards)
        if keep.size == 0:
            print(f"rank {jax.process_index()}: all samples filtered, skipping update")
            multihost_utils.sync_global_devices("grpo learn skipped")
            return
        actions, adv = actions[keep], adv[keep].astype(np.float32)
        for start in range(0, len(actions), self.cfg.micro_batch):
            a = actions[start:start + self.cfg.micro_batch]
            v = adv[start:start + self.cfg.micro_batch]
            ga = jax.make_array_from_process_local_data(BATCH, a)
            gv = jax.make_array_from_process_local_data(BATCH, v)
            self.logits = grad_step(self.logits, ga, gv, self.cfg.lr)
            self.updates += 1


def main():
    learner = GRPOLearner(GRPOConfig())
    actions, rewards = rollout_groups(jax.process_index())
    learner.learn(actions, rewards)
    print("RESULT micro_updates", learner.updates)
    print("RESULT policy", np.round(np.asarray(learner.logits), 4).tolist())


if __name__ == "__main__":
    main()

# GRPO trainer that drops zero-variance reward groups on each data-parallel process, leaving processes with different mini-batch counts
# Source: https://github.com/verl-project/verl/pull/5228
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class GRPOConfig:
    prompts_per_process: int = 4
    group_size: int = 4
    feat_dim: int = 6
    ppo_mini_batch: int = 4      # samples per process per optimizer step
    lr: float = 0.1


MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
ROWS2 = NamedSharding(MESH, P("dp", None))
REPL = NamedSharding(MESH, P())


def rollout(cfg, params):
    # each process samples group_size responses for its own prompts; the verifier gives 0/1 rewards
    rng = np.random.default_rng(100 + jax.process_index())
    n = cfg.prompts_per_process * cfg.group_size
    feats = rng.normal(size=(n, cfg.feat_dim)).astype(np.float32)
    # process 0 was dealt the easy prompts of the dataset: its first two are solved by every response
    ease = np.array([5.0, 5.0, 0.0, 0.0]) if jax.process_index() == 0 else np.zeros(cfg.prompts_per_process)
    rewards = (feats[:, 0] + feats @ np.asarray(params) + np.repeat(ease, cfg.group_size) > 0).astype(np.float32)
    return feats, rewards


def group_advantages(rewards, group_size):
    r = rewards.reshape(-1, group_size)
    std = r.std(axis=1, keepdims=True)
    return ((r - r.mean(axis=1, keepdims=True)) / (std + 1e-6)).reshape(-1), std.reshape(-1)


def filter_zero_variance_groups(feats, adv, std, group_size):
    keep = np.repeat(std > 0, group_size)
    return feats[keep], adv[keep], np.ones(int(keep.sum()), np.float32)


@jax.jit
def policy_step(w, feats, adv, mask, lr):
    def loss(w):
        logp = jax.nn.log_sigmoid(feats @ w)
        return -jnp.sum(mask * adv * logp) / jnp.maximum(jnp.sum(mask), 1.0)
    l, g = jax.value_and_grad(loss)(w)
    return w - lr * g, l


def train_iteration(cfg, w):
    feats, rewards = rollout(cfg, w)
    adv, std = group_advantages(rewards, cfg.group_size)
    feats, adv, mask = filter_zero_variance_groups(feats, adv, std, cfg.group_size)
    n_mini = len(adv) // cfg.ppo_mini_batch
    losses = []
    for i in range(n_mini):
        sl = slice(i * cfg.ppo_mini_batch, (i + 1) * cfg.ppo_mini_batch)
        g_f = jax.make_array_from_process_local_data(ROWS2, feats[sl])
        g_a = jax.make_array_from_process_local_data(ROWS, adv[sl].astype(np.float32))
        g_m = jax.make_array_from_process_local_data(ROWS, mask[sl])
        w, l = policy_step(w, g_f, g_a, g_m, cfg.lr)
        losses.append(float(l))
    return w, losses


def main():
    cfg = GRPOConfig()
    w = jax.device_put(jnp.zeros(cfg.feat_dim), REPL)
    w, losses = train_iteration(cfg, w)
    print("RESULT optimizer_steps", len(losses))
    print("RESULT weight_norm", round(float(jnp.linalg.norm(w)), 5))


if __name__ == "__main__":
    main()

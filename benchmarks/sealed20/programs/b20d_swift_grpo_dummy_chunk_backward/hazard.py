# GRPO-style multi-turn RL update with ZeRO-3-like sharded parameters: every forward all-gathers
# the parameter shards and every backward reduce-scatters the gradient. The number of training
# samples per rank depends on how many turns each rollout produced, so the loss is computed in
# chunks and ranks with fewer chunks run dummy chunks to stay in step.
import math
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class GRPOConfig:
    prompts_per_rank: int = 4
    max_turns: int = 4
    chunk_size: int = 3
    hidden: int = 8
    lr: float = 0.05
    steps: int = 2


class ShardedPolicy:
    """Keeps 1/world of the flat parameter vector on each rank (ZeRO stage 3)."""

    def __init__(self, hidden, rank, world):
        full = np.asarray(jax.random.normal(jax.random.PRNGKey(0), (hidden,)), dtype=np.float32)
        self.rank, self.world, self.size = rank, world, hidden
        self.shard = full[rank::world].copy()

    def gather_params(self):
        shards = np.asarray(multihost_utils.process_allgather(self.shard))
        full = np.empty(self.size, dtype=np.float32)
        for r in range(self.world):
            full[r::self.world] = shards[r]
        return jnp.asarray(full)

    def reduce_scatter(self, grad):
        summed = np.asarray(multihost_utils.process_allgather(np.asarray(grad, dtype=np.float32))).sum(axis=0)
        return summed[self.rank::self.world] / self.world


def chunk_loss(params, feats, advantages):
    logp = jax.nn.log_sigmoid(feats @ params)
    return -jnp.mean(logp * advantages)


loss_and_grad = jax.jit(jax.value_and_grad(chunk_loss))
forward = jax.jit(chunk_loss)


def rollout(rng, cfg):
    samples = []
    for _ in range(cfg.prompts_per_rank):
        turns = int(rng.integers(1, cfg.max_turns + 1))
        for _ in range(turns):
            samples.append((rng.normal(size=cfg.hidden).astype(np.float32), float(rng.normal())))
    feats = np.stack([s[0] for s in samples])
    adv = np.array([s[1] for s in samples], dtype=np.float32)
    return feats, (adv - adv.mean()) / (adv.std() + 1e-6)


def compute_loss_chunked(policy, feats, adv, cfg):
    local_chunks = math.ceil(len(feats) / cfg.chunk_size)
    max_chunks = int(np.asarray(multihost_utils.process_allgather(np.int32(local_chunks))).max())
    losses = []
    for i in range(max_chunks):
        params = policy.gather_params()
        if i < local_chunks:
            sl = slice(i * cfg.chunk_size, (i + 1) * cfg.chunk_size)
            losses.append((params, feats[sl], adv[sl], 1.0))
        else:
            forward(params, feats[:1], adv[:1])
    grad_shard = np.zeros_like(policy.shard)
    total = 0.0
    for params, f, a, scale in losses:
        loss, g = loss_and_grad(params, f, a)
        grad_shard += policy.reduce_scatter(g * scale)
        total += float(loss) * scale
    return total, grad_shard


def main():
    cfg = GRPOConfig()
    rank, world = jax.process_index(), jax.process_count()
    policy = ShardedPolicy(cfg.hidden, rank, world)
    rng = np.random.default_rng(2024 + 17 * rank)
    for step in range(cfg.steps):
        feats, adv = rollout(rng, cfg)
        loss, grad_shard = compute_loss_chunked(policy, feats, adv, cfg)
        policy.shard -= cfg.lr * grad_shard
        print(f"step {step}: samples={len(feats)} loss={loss:.4f}")
    params = policy.gather_params()
    print("RESULT policy_params", [round(float(v), 4) for v in params])


if __name__ == "__main__":
    main()

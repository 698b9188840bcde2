# RL trainer step for a vision-language policy, FSDP style: every parameter is sharded across the
# training workers and all-gathered right before the module that uses it runs. The orchestrator
# hands the trainer one list of packed micro batches (text-only and image+text samples); prepare_batch
# splits it across the workers, each worker runs its micro batches and the step loss is all-reduced.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

D_MODEL, PATCH, SEQ = 8, 12, 6


@dataclass
class MicroBatch:
    tokens: np.ndarray
    advantages: np.ndarray
    pixel_values: np.ndarray | None = None
    loss_scale: float = 1.0


class ShardedParam:
    """One FSDP flat-parameter shard: this worker keeps rows [rank::world] of the full matrix."""

    def __init__(self, full, rank, world):
        self.shape = full.shape
        self.local = np.ascontiguousarray(full.reshape(world, -1, full.shape[1])[rank])

    def unshard(self):
        return np.asarray(multihost_utils.process_allgather(self.local)).reshape(self.shape)


class VLMPolicy:
    def __init__(self, rank, world, seed=7):
        rng = np.random.default_rng(seed)
        self.vision_proj = ShardedParam(rng.normal(scale=0.2, size=(PATCH, D_MODEL)).astype(np.float32), rank, world)
        self.lm_head = ShardedParam(rng.normal(scale=0.2, size=(D_MODEL * 2, D_MODEL)).astype(np.float32), rank, world)

    def forward(self, mb):
        h = np.tanh(mb.tokens)  # (SEQ, D_MODEL) token embeddings
        if mb.pixel_values is not None:
            w_vis = self.vision_proj.unshard()
            h = h + (mb.pixel_values @ w_vis).mean(0, keepdims=True)
        w_lm = self.lm_head.unshard()
        logits = jnp.concatenate([h, h ** 2], axis=-1) @ w_lm
        logp = jax.nn.log_softmax(logits)[:, 0]
        return float(-(logp * mb.advantages).mean() * mb.loss_scale)


def build_rollout_batch(num_micro=6, seed=11):
    rng = np.random.default_rng(seed)
    batches = []
    for i in range(num_micro):
        tokens = rng.normal(size=(SEQ, D_MODEL)).astype(np.float32)
        adv = rng.normal(size=SEQ).astype(np.float32)
        pixels = rng.normal(size=(4, PATCH)).astype(np.float32) if i in (0, 1, 5) else None
        batches.append(MicroBatch(tokens, adv, pixels))
    return batches


def _make_dummy_batch(mb):
    return MicroBatch(mb.tokens, mb.advantages, mb.pixel_values, loss_scale=0.0)


def _pad_group_for_distribution(group, num_train_workers):
    group = list(group)
    while len(group) % num_train_workers:
        group.append(_make_dummy_batch(group[-1]))
    return group


def prepare_batch(micro_batches, num_train_workers, rank):
    multimodal = [mb for mb in micro_batches if mb.pixel_values is not None]
    text_only = [mb for mb in micro_batches if mb.pixel_values is None]
    ordered = (_pad_group_for_distribution(multimodal, num_train_workers)
               + _pad_group_for_distribution(text_only, num_train_workers))
    return ordered[rank::num_train_workers]


def train_step(model, micro_batches, rank, world):
    local = prepare_batch(micro_batches, world, rank)
    losses = []
    for mb in local:
        losses.append(model.forward(mb))
    total = np.float32(sum(losses))
    return float(np.asarray(multihost_utils.process_allgather(total)).sum())


def main():
    rank, world = jax.process_index(), jax.process_count()
    model = VLMPolicy(rank, world)
    batch = build_rollout_batch()
    loss = train_step(model, batch, rank, world)
    print(f"rank {rank}: trained on {len(prepare_batch(batch, world, rank))} micro batches")
    print("RESULT loss", round(loss, 4))


if __name__ == "__main__":
    main()

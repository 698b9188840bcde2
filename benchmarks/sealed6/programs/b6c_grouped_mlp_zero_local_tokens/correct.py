# Grouped expert MLP with FSDP-sharded weights: zero local tokens are padded with one dummy token per expert
# Source: https://github.com/NVIDIA/Megatron-LM/pull/4851 (port of the TEGroupedMLP zero-local-tokens hang to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
HIDDEN, FFN, NUM_EXPERTS, PAD = 4, 8, 2, -1


class ShardedLinear:
    """Each process stores a slice of the rows; the full weight is gathered just before it is used."""

    def __init__(self, full: np.ndarray):
        rows = full.shape[0] // jax.process_count()
        self.shard = full[jax.process_index() * rows:(jax.process_index() + 1) * rows]

    def unshard(self) -> np.ndarray:
        return np.asarray(multihost_utils.process_allgather(self.shard, tiled=True))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x @ self.unshard()


class GroupedMLP:
    def __init__(self, seed: int = 3):
        rng = np.random.default_rng(seed)
        self.linear_fc1 = [ShardedLinear(rng.normal(size=(HIDDEN, FFN)).astype(np.float32)) for _ in range(NUM_EXPERTS)]
        self.linear_fc2 = [ShardedLinear(rng.normal(size=(FFN, HIDDEN)).astype(np.float32) * 0.2) for _ in range(NUM_EXPERTS)]

    def forward(self, tokens: np.ndarray, expert_ids: np.ndarray, probs: np.ndarray) -> np.ndarray:
        tokens_per_expert = np.bincount(expert_ids, minlength=NUM_EXPERTS).tolist()
        num_real = len(tokens)
        if sum(tokens_per_expert) == 0:
            tokens = np.zeros((NUM_EXPERTS, HIDDEN), np.float32)
            expert_ids, probs = np.arange(NUM_EXPERTS), np.zeros((NUM_EXPERTS,), np.float32)
        out = np.zeros_like(tokens)
        for e in range(NUM_EXPERTS):
            sel = expert_ids == e
            h = np.maximum(self.linear_fc1[e](tokens[sel]), 0.0)
            out[sel] = self.linear_fc2[e](h) * probs[sel, None]
        return out[:num_real]


class MoELayer:
    def __init__(self):
        self.router = np.random.default_rng(9).normal(size=(HIDDEN, NUM_EXPERTS)).astype(np.float32)
        self.experts = GroupedMLP()

    def __call__(self, token_ids: np.ndarray, embed: np.ndarray) -> np.ndarray:
        real = token_ids[token_ids != PAD]          # padding is dropped before routing
        x = embed[real]
        logits = x @ self.router
        expert_ids = logits.argmax(axis=1)
        probs = 1.0 / (1.0 + np.exp(-logits.max(axis=1))) if len(x) else np.zeros((0,), np.float32)
        return self.experts.forward(x, expert_ids, probs.astype(np.float32))


def micro_batches(process: int):
    # host 1 holds the ragged tail of the shard: its last micro-batch is all padding
    yield np.array([1, 5, 2, PAD]) if process == 0 else np.array([3, 7, PAD, PAD])
    yield np.array([4, 6, 0, 2]) if process == 0 else np.array([PAD, PAD, PAD, PAD])


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("dp",))
    embed = np.random.default_rng(0).normal(size=(8, HIDDEN)).astype(np.float32)
    layer = MoELayer()
    for step, ids in enumerate(micro_batches(jax.process_index())):
        out = layer(ids, embed)
        local = np.array([out.sum(), float(len(out))], np.float32)[None]
        stats = jax.make_array_from_process_local_data(NamedSharding(mesh, P("dp")), local)
        total = jax.jit(lambda s: s.sum(axis=0), out_shardings=NamedSharding(mesh, P()))(stats)
        total = np.asarray(total.addressable_data(0))
        print("RESULT step", step, "tokens", int(total[1]), "sum", round(float(total[0]), 4))


if __name__ == "__main__":
    main()

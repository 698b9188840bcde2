# Muon-style optimizer step for FSDP2-sharded 2D weights ("megabatch" orthogonalization): each
# worker holds a contiguous row chunk of every weight. Same-shape weights are grouped; an all-to-all
# sends every worker's row chunk of weight j to the worker that owns j, the owner assembles the full
# matrix, runs Newton-Schulz, and a second all-to-all returns the orthogonalized row chunks.
import math
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_HEADS, HIDDEN, NUM_LAYERS = 3, 8, 2


def chunk_rows(full, world, rank):
    """FSDP2 contiguous chunking along dim 0 (torch.chunk semantics)."""
    size = math.ceil(full.shape[0] / world)
    return full[rank * size:(rank + 1) * size].copy()


def newton_schulz(x, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = x / (np.linalg.norm(x) + 1e-7)
    for _ in range(steps):
        m = x @ x.T
        x = a * x + (b * m + c * m @ m) @ x
    return x


def all_to_all(chunks):
    """chunks[dst] goes to worker dst; returns the list received from every source worker."""
    rank = jax.process_index()
    gathered = np.asarray(multihost_utils.process_allgather(np.stack(chunks)))
    return [gathered[src, rank] for src in range(gathered.shape[0])]


def megabatch_orthogonalize(local_shards, world):
    n = len(local_shards)
    per_rank = math.ceil(n / world)
    work = list(local_shards) + [np.zeros_like(local_shards[0])] * (per_rank * world - n)
    input_chunks = [np.stack(work[r * per_rank:(r + 1) * per_rank]) for r in range(world)]
    received = all_to_all(input_chunks)
    full = np.concatenate(received, axis=1)
    ortho = np.stack([newton_schulz(m) for m in full])
    back = all_to_all(np.split(ortho, world, axis=1))
    out = [m for src in back for m in src]
    return out[:n]


class NorMuon:
    def __init__(self, shards, lr=0.05, momentum=0.9):
        self.shards = shards
        self.lr, self.momentum = lr, momentum
        self.buf = {k: np.zeros_like(v) for k, v in shards.items()}

    def step(self, grads, world):
        names = sorted(self.shards)
        for k in names:
            self.buf[k] = self.momentum * self.buf[k] + grads[k]
        updates = megabatch_orthogonalize([self.buf[k] for k in names], world)
        for k, u in zip(names, updates):
            self.shards[k] = self.shards[k] - self.lr * u


def main():
    rank, world = jax.process_index(), jax.process_count()
    rng = np.random.default_rng(0)
    full = {f"layers.{i}.attn_gate.weight": rng.normal(size=(NUM_HEADS, HIDDEN)).astype(np.float32)
            for i in range(NUM_LAYERS)}
    opt = NorMuon({k: chunk_rows(v, world, rank) for k, v in full.items()})
    for step in range(3):
        grad_rng = np.random.default_rng(1000 + step)
        grads = {k: chunk_rows(grad_rng.normal(size=v.shape).astype(np.float32), world, rank)
                 for k, v in sorted(full.items())}
        opt.step(grads, world)
    local = np.float32(sum(float(v.sum()) for v in opt.shards.values()))
    total = float(np.asarray(multihost_utils.process_allgather(local)).sum())
    print(f"rank {rank}: local rows {[v.shape[0] for v in opt.shards.values()]}")
    print("RESULT param_sum", round(total, 4))


if __name__ == "__main__":
    main()

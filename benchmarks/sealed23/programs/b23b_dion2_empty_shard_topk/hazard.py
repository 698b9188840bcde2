# Dion2-style optimizer step for FSDP2-sharded 2D weights: each worker holds a contiguous row
# chunk of every weight. Before orthogonalization, each worker selects the `fraction` of its rows
# with the largest norms (pre-orthogonalize); the selected rows, zero-padded to the rank-consistent
# padded local size, go through the megabatch all-to-all, Newton-Schulz, and back.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HIDDEN = 8
SHAPES = {"router.gate.weight": (1, HIDDEN), "mlp.down.weight": (6, HIDDEN)}


def chunk_rows(full, world, rank):
    """FSDP2 contiguous chunking along dim 0 (torch.chunk semantics, trailing ranks may be empty)."""
    size = math.ceil(full.shape[0] / world)
    return full[rank * size:(rank + 1) * size].copy()


def newton_schulz(x, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = x / (np.linalg.norm(x) + 1e-7)
    for _ in range(steps):
        m = x @ x.T
        x = a * x + (b * m + c * m @ m) @ x
    return x


def dion2_pre_orthogonalize(m, fraction):
    num_select = m.shape[0]
    k = max(1, int(fraction * num_select))
    slice_norms = jnp.linalg.norm(jnp.asarray(m), axis=1)
    _, indices = jax.lax.top_k(slice_norms, k)
    indices = np.asarray(indices)
    return m[indices], indices


def megabatch_orthogonalize(selected, padded_local_size):
    rank = jax.process_index()
    padded = np.pad(selected, ((0, padded_local_size - selected.shape[0]), (0, 0)))
    gathered = np.asarray(multihost_utils.process_allgather(padded))
    ortho = newton_schulz(gathered.reshape(-1, HIDDEN))
    return ortho.reshape(gathered.shape)[rank][:selected.shape[0]]


class Dion2:
    def __init__(self, shards, global_rows, world, lr=0.05, fraction=0.5):
        self.shards, self.lr, self.fraction = shards, lr, fraction
        self.padded = {k: math.ceil(n / world) for k, n in global_rows.items()}

    def step(self, grads):
        for name in sorted(self.shards):
            selected, idx = dion2_pre_orthogonalize(grads[name], self.fraction)
            update = megabatch_orthogonalize(selected, self.padded[name])
            self.shards[name][idx] -= self.lr * update


def main():
    rank, world = jax.process_index(), jax.process_count()
    rng = np.random.default_rng(0)
    full = {k: rng.normal(size=s).astype(np.float32) for k, s in SHAPES.items()}
    opt = Dion2({k: chunk_rows(v, world, rank) for k, v in full.items()},
                {k: s[0] for k, s in SHAPES.items()}, world)
    for step in range(3):
        grad_rng = np.random.default_rng(500 + step)
        grads = {k: chunk_rows(grad_rng.normal(size=SHAPES[k]).astype(np.float32), world, rank)
                 for k in sorted(SHAPES)}
        opt.step(grads)
    local = np.float32(sum(float(v.sum()) for v in opt.shards.values()))
    total = float(np.asarray(multihost_utils.process_allgather(local)).sum())
    print(f"rank {rank}: local rows {[opt.shards[k].shape[0] for k in sorted(opt.shards)]}")
    print("RESULT param_sum", round(total, 4))


if __name__ == "__main__":
    main()

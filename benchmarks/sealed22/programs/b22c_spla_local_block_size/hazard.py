# Wave-function inner product <psi|phi> for a plane-wave code, computed with an SPLA-style
# distributed "stripe x stripe -> block" GEMM: the G-vector rows of both wave-function sets are
# distributed over ranks, each rank forms its partial product tile by tile, and every tile of the
# result is summed over the ranks.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class SplaContext:
    processing_unit: str = "gpu"
    tile_size_host: int = 4
    tile_size_gpu: int = 8


def is_device_array(x):
    return isinstance(x, jax.Array)


def block_size(ctx, m, n, a_ptr, size):
    """Pick the tile edge from the problem size, where the input lives and the rank count."""
    on_device = is_device_array(a_ptr)
    base = ctx.tile_size_gpu if on_device else ctx.tile_size_host
    while base * size > max(m, n) and base > 1:
        base //= 2
    return base


def pgemm_ssb(ctx, m, n, k_global, a_loc, b_loc):
    """C(m x n) = sum over ranks of A_loc^T B_loc, reduced tile by tile."""
    size = jax.process_count()
    bs = block_size(ctx, m, n, a_loc, size)
    a = np.zeros((0, m), np.float32) if a_loc is None else np.asarray(a_loc)
    b = np.zeros((0, n), np.float32) if b_loc is None else np.asarray(b_loc)
    c = np.zeros((m, n), np.float32)
    for i0 in range(0, m, bs):
        for j0 in range(0, n, bs):
            tile = a[:, i0:i0 + bs].T @ b[:, j0:j0 + bs]
            tile = np.asarray(multihost_utils.process_allgather(tile)).sum(0)
            c[i0:i0 + bs, j0:j0 + bs] = tile
    return c


class WaveFunctions:
    """num_wf bands stored as G-vector rows, distributed in blocks of gvec_block rows."""

    def __init__(self, num_gvec, num_wf, seed, gvec_block=128):
        rank, size = jax.process_index(), jax.process_count()
        full = np.random.default_rng(seed).normal(size=(num_gvec, num_wf)).astype(np.float32)
        rows = [g for g in range(num_gvec) if (g // gvec_block) % size == rank]
        self.num_gvec, self.num_wf = num_gvec, num_wf
        self.local = full[rows]

    def at_device(self):
        # ranks that hold no G-vectors hand over no buffer
        return jnp.asarray(self.local) if len(self.local) else None


def inner(ctx, psi, phi):
    return pgemm_ssb(ctx, psi.num_wf, phi.num_wf, psi.num_gvec, psi.at_device(), phi.at_device())


def main():
    ctx = SplaContext()
    num_gvec = 100  # a small basis: fewer G-vectors than one distribution block
    psi = WaveFunctions(num_gvec, 24, seed=1)
    phi = WaveFunctions(num_gvec, 24, seed=2)
    ovlp = inner(ctx, psi, phi)
    norm = inner(ctx, psi, psi)
    print(f"rank {jax.process_index()}: {len(psi.local)} local G-vectors")
    print("RESULT overlap_trace", round(float(np.trace(ovlp)), 3))
    print("RESULT norm_diag", np.round(np.diag(norm), 2).tolist())


if __name__ == "__main__":
    main()

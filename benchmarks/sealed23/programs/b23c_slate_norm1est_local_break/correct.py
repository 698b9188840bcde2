# Hager/Higham 1-norm estimator (LAPACK xLACN2 style, as in SLATE's norm1est) for a matrix
# distributed by block rows: every process owns a block of rows of A and the matching block of
# the sign vector; products with A and A^T are completed with cross-process reductions.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N = 8
ITMAX = 5


class DistributedMatrix:
    def __init__(self, rank, size, seed=2):
        full = np.random.default_rng(seed).normal(size=(N, N)).astype(np.float32)
        self.mb = N // size
        self.rows = slice(rank * self.mb, (rank + 1) * self.mb)
        self.local = full[self.rows]

    def matvec(self, x):
        return np.asarray(_matvec(jnp.asarray(self.local), jnp.asarray(x)))

    def rmatvec(self, s_local):
        part = np.asarray(_rmatvec(jnp.asarray(self.local), jnp.asarray(s_local)))
        return np.asarray(multihost_utils.process_allgather(part)).sum(axis=0)


@jax.jit
def _matvec(a, x):
    return a @ x


@jax.jit
def _rmatvec(a, s):
    return a.T @ s


def global_sum(v):
    return float(np.asarray(multihost_utils.process_allgather(np.float32(v))).sum())


def norm1est(A):
    x = np.full(N, 1.0 / N, dtype=np.float32)
    isgn = None
    est = 0.0
    for it in range(ITMAX):
        y = A.matvec(x)
        est = global_sum(np.abs(y).sum())
        sign_x = np.where(y >= 0, 1.0, -1.0).astype(np.float32)
        if isgn is not None:
            changed = bool(np.any(sign_x != isgn))
            changed = bool(np.asarray(multihost_utils.process_allgather(np.int32(changed))).max())
            if not changed:
                break
        isgn = sign_x
        z = A.rmatvec(isgn)
        j = int(np.argmax(np.abs(z)))
        x = np.zeros(N, dtype=np.float32)
        x[j] = 1.0
    return est, it


def main():
    rank, size = jax.process_index(), jax.process_count()
    A = DistributedMatrix(rank, size)
    est, iters = norm1est(A)
    col_sums = np.asarray(multihost_utils.process_allgather(np.abs(A.local).sum(axis=0))).sum(axis=0)
    print(f"rank {rank}: estimate {est:.5f} after {iters} iterations, exact {col_sums.max():.5f}")
    print("RESULT norm1est", round(est, 4))
    print("RESULT iterations", iters)
    print("RESULT norm1_exact", round(float(col_sums.max()), 4))


if __name__ == "__main__":
    main()

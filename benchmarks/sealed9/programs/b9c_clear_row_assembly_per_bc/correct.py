# Port of a GEOS PETSc-interface fix to multi-controller JAX (correct look-alike): BC rows are only recorded, and all of them are cleared in one collective assembly that every rank calls once.
# Source: https://github.com/GEOS-DEV/GEOS/pull/853
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N = 12
STASH = 4


class PetscMatrix:
  """Row-distributed sparse-ish matrix; off-process entries are stashed until assembly."""

  def __init__(self, n):
    nproc, rank = jax.process_count(), jax.process_index()
    self.lo, self.hi = rank * n // nproc, (rank + 1) * n // nproc
    self.rows = np.zeros((self.hi - self.lo, n), np.float32)
    self.stash = []
    self.pending_clear = []

  def add(self, i, j, v):
    if self.lo <= i < self.hi:
      self.rows[i - self.lo, j] += v
    else:
      self.stash.append((i, j, v))

  def assemble(self):
    """MatAssemblyBegin/End: collective exchange of the stashed off-process entries."""
    buf = np.full((STASH, 3), -1.0, np.float32)
    for k, e in enumerate(self.stash[:STASH]):
      buf[k] = e
    for i, j, v in np.asarray(multihost_utils.process_allgather(buf)).reshape(-1, 3):
      if i >= 0 and self.lo <= int(i) < self.hi:
        self.rows[int(i) - self.lo, int(j)] += v
    self.stash = []
    for i in self.pending_clear:
      self.rows[i - self.lo, :] = 0.0
      self.rows[i - self.lo, i] = 1.0
    self.pending_clear = []

  def clear_row(self, i):
    self.pending_clear.append(i)


def assemble_laplacian(A):
  for e in range(N - 1):          # each rank assembles the elements it owns (by left node)
    if A.lo <= e < A.hi:
      for a, b, v in ((e, e, 1.0), (e + 1, e + 1, 1.0), (e, e + 1, -1.0), (e + 1, e, -1.0)):
        A.add(a, b, v)
  A.assemble()


def apply_bcs(A, rhs, bc):
  for i, value in bc.items():
    if A.lo <= i < A.hi:
      A.clear_row(i)
      rhs[i] = value
  A.assemble()


def solve(A, rhs, iters=300):
  x = np.zeros(N, np.float32)
  diag = np.asarray([A.rows[i - A.lo, i] for i in range(A.lo, A.hi)])
  matvec = jax.jit(lambda rows, x: rows @ x)
  for _ in range(iters):
    r = rhs[A.lo:A.hi] - np.asarray(matvec(jnp.asarray(A.rows), jnp.asarray(x)))
    local = (x[A.lo:A.hi] + 0.8 * r / diag).astype(np.float32)
    x = np.asarray(multihost_utils.process_allgather(local)).reshape(-1)
  return x


def main():
  A = PetscMatrix(N)
  assemble_laplacian(A)
  rhs = np.full(N, 0.1, np.float32)
  bc = {0: 1.0, 1: 1.0, 2: 1.0, N - 1: 0.0}    # Dirichlet rows: three on rank 0, one on rank 1
  apply_bcs(A, rhs, bc)
  x = solve(A, rhs)
  print(f"RESULT solution {np.round(x, 4).tolist()}")


if __name__ == "__main__":
  main()

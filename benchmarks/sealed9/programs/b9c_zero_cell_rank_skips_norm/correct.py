# Port of an OPM Flow report to multi-controller JAX (correct look-alike): a process that owns 0 cells still joins the global residual reduction with a zero contribution.
# Source: https://github.com/OPM/opm-simulators/issues/1726
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NX = 12
TOL = 1e-5


def load_balance(num_procs, wells):
  """Give every cell to the partition of the nearest well (wells moved manually to partitions)."""
  x = np.arange(NX)
  owner = np.array([min(wells, key=lambda w: abs(w[0] - xi))[1] for xi in x])
  return [np.nonzero(owner == p)[0] for p in range(num_procs)]


class PressureModel:
  """1-D pressure diffusion; each process relaxes its own cells."""

  def __init__(self, cells):
    self.cells = cells
    self.perm = jnp.asarray(1.0 + 0.1 * np.arange(NX, dtype=np.float32))
    self._residual = jax.jit(self._residual_impl)

  @staticmethod
  def _residual_impl(p, perm):
    lap = jnp.zeros_like(p).at[1:-1].set(perm[1:-1] * (p[:-2] - 2 * p[1:-1] + p[2:]))
    return lap

  def local_update(self, p):
    r = np.asarray(self._residual(jnp.asarray(p), self.perm))
    p = p.copy()
    p[self.cells] += 0.2 * r[self.cells]
    return p, r

  def newton_converged(self, r):
    local = np.float32(np.sum(r[self.cells] ** 2)) if self.cells.size else np.float32(0.0)
    total = np.asarray(multihost_utils.process_allgather(local)).sum()
    return float(np.sqrt(total)) < TOL


def simulate(max_iters=400):
  parts = load_balance(jax.process_count(), wells=[(1, 1), (10, 1)])
  model = PressureModel(parts[jax.process_index()])
  p = np.linspace(200.0, 100.0, NX).astype(np.float32)
  p[NX // 2] = 260.0
  it = 0
  for it in range(1, max_iters + 1):
    p, r = model.local_update(p)
    owned = np.where(np.isin(np.arange(NX), model.cells), p, 0.0).astype(np.float32)
    p = np.asarray(multihost_utils.process_allgather(owned)).sum(axis=0)
    if model.newton_converged(r):
      break
  return p, it


def main():
  p, its = simulate()
  print(f"RESULT iterations {its}")
  print(f"RESULT pressure {np.round(p, 3).tolist()}")


if __name__ == "__main__":
  main()

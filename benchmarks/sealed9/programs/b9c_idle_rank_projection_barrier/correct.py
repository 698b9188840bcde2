# Port of a yt report to multi-controller JAX (correct look-alike): every process runs the same number of rounds; an idle process still joins the projection's barrier with a dummy object.
# Source: https://github.com/yt-project/yt/issues/952
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

GRID = 16


class Hierarchy:
  """Grid hierarchy loaded on the global communicator: every process holds all grids."""

  def __init__(self, seed=3):
    rng = np.random.default_rng(seed)
    self.density = jnp.asarray(rng.lognormal(size=(GRID, GRID, GRID)).astype(np.float32))
    self._proj = jax.jit(lambda d, m: jnp.einsum("xyz,xyz->xy", d, m))

  def project(self, center, width):
    """Sum the density along z inside a box, then close the projection with a global barrier."""
    lo = np.clip(((center - width) * GRID).astype(int), 0, GRID)
    hi = np.clip(((center + width) * GRID).astype(int), 0, GRID)
    mask = np.zeros((GRID, GRID, GRID), np.float32)
    mask[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]] = 1.0
    proj = np.asarray(self._proj(self.density, jnp.asarray(mask)))[lo[0]:hi[0], lo[1]:hi[1]]
    multihost_utils.sync_global_devices("projection_done")
    return proj


def parallel_objects(objs):
  """Deal the objects round-robin to processes, as yt's parallel_objects does."""
  n, i = jax.process_count(), jax.process_index()
  rounds = -(-len(objs) // n)
  for r in range(rounds):
    k = r * n + i
    yield (k, objs[k]) if k < len(objs) else (None, objs[0])


def do_parallel(centers, width=0.1):
  h = Hierarchy()
  results = {}
  for k, c in parallel_objects(centers):
    proj = h.project(c, width)
    if k is not None:
      results[k] = float(proj.mean())
  return results


def main():
  rng = np.random.default_rng(11)
  centers = 0.2 + 0.6 * rng.random((3, 3))
  results = do_parallel(centers)
  vals = np.zeros(len(centers), np.float32)
  for k, v in results.items():
    vals[k] = v
  total = np.asarray(multihost_utils.process_allgather(vals)).sum(axis=0)
  print(f"RESULT projections {np.round(total, 4).tolist()}")


if __name__ == "__main__":
  main()

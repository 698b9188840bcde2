# Port to JAX of an OpenMDAO MPI hang: the collective exception check sits inside `if high_dims:`, so a
# process whose local block of a distributed variable is flat (shape (0,)) skips the allgather.
# Source: https://github.com/OpenMDAO/OpenMDAO/pull/2208 (issue https://github.com/OpenMDAO/OpenMDAO/issues/2199)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import contextlib
import os
import traceback

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@contextlib.contextmanager
def multi_proc_exception_check():
  """Raise on every process if any process raised inside the block (collective on exit)."""
  failed = 0
  try:
    yield
  except Exception:
    traceback.print_exc()
    failed = 1
  flags = multihost_utils.process_allgather(np.array([failed], dtype=np.int32), tiled=True)
  if flags.any():
    raise RuntimeError(f"exception raised on process(es) {np.nonzero(flags)[0].tolist()}")


class DistributedVar:
  def __init__(self, name, local_value):
    self.name = name
    self.value = np.asarray(local_value, dtype=np.float32)
    self.meta = {"shape": self.value.shape, "size": self.value.size, "distributed": True}


class Group:
  def __init__(self, variables):
    self._vars = {v.name: v for v in variables}

  def _setup_global_shapes(self):
    """Compute global sizes/offsets of distributed variables from every process's local shape."""
    global_sizes = {}
    for name, var in self._vars.items():
      meta = var.meta
      local_shape = meta["shape"]
      high_dims = local_shape[1:]
      if high_dims:
        with multi_proc_exception_check():
          high_size = int(np.prod(high_dims))
          if meta["size"] % high_size != 0:
            raise RuntimeError(f"{name}: local size {meta['size']} not divisible by {high_size}")
      sizes = multihost_utils.process_allgather(np.array([meta["size"]], dtype=np.int32), tiled=True)
      meta["global_size"] = int(sizes.sum())
      global_sizes[name] = meta["global_size"]
    return global_sizes

  def global_sum(self, name):
    local = np.array([self._vars[name].value.sum()], dtype=np.float32)
    return float(multihost_utils.process_allgather(local, tiled=True).sum())


def main():
  if jax.process_index() == 0:
    x_local = np.arange(6, dtype=np.float32).reshape(3, 2)
  else:
    x_local = np.zeros((0,), dtype=np.float32)  # this process owns no rows of x_dist
  model = Group([DistributedVar("x_dist", x_local)])
  with multi_proc_exception_check():
    sizes = model._setup_global_shapes()
  print(f"RESULT global_size={model._vars['x_dist'].meta['global_size']}")
  print(f"RESULT x_dist_sum={model.global_sum('x_dist'):.1f}")


if __name__ == "__main__":
  main()

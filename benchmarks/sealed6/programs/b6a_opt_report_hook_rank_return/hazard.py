# Port to JAX of an OpenMDAO MPI hang: the optimizer report (a post-run_driver hook) returns early on
# every rank but 0, then gathers distributed design-variable values, a collective, on rank 0 alone.
# Source: https://github.com/OpenMDAO/OpenMDAO/pull/2596 ("prevent hang in opt_report when using MPI";
#   dymos issue https://github.com/OpenMDAO/dymos/issues/777)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import collections
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

_HOOKS = collections.defaultdict(list)


def register_report(name, func, desc, class_name, method, pre_or_post):
  _HOOKS[(class_name, method, pre_or_post)].append((name, func))


def run_hooks(inst, method, pre_or_post):
  for _, func in _HOOKS[(type(inst).__name__, method, pre_or_post)]:
    func(inst)


class Driver:
  supports = {"optimization": True}

  def __init__(self, x_local):
    self._designvars = {"x": {"distributed": True, "lower": -10.0, "upper": 10.0}}
    self._x_local = np.asarray(x_local, dtype=np.float32)
    self.iter_count = 0

  def get_design_var_values(self):
    """Full values of the design variables; distributed ones are gathered from every process."""
    out = {}
    for name, meta in self._designvars.items():
      if meta["distributed"]:
        out[name] = multihost_utils.process_allgather(self._x_local, tiled=True)
      else:
        out[name] = self._x_local
    return out

  def run(self, mesh):
    sharding = NamedSharding(mesh, P("procs"))
    grad = jax.jit(lambda x: 2.0 * (x - 3.0))
    for _ in range(5):
      x = jax.make_array_from_process_local_data(sharding, self._x_local)
      self._x_local = self._x_local - 0.25 * np.asarray(grad(x).addressable_data(0))
      self.iter_count += 1


class Problem:
  def __init__(self, driver):
    self.driver = driver
    self.mesh = jax.make_mesh((jax.device_count(),), ("procs",))
    self.reports_dir = os.path.join(tempfile.gettempdir(), f"b6a_optrep_{os.environ.get('JOB_ID', 'local')}")

  def run_driver(self):
    run_hooks(self, "run_driver", "pre")
    self.driver.run(self.mesh)
    run_hooks(self, "run_driver", "post")

  def objective(self):
    x = jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("procs")), self.driver._x_local)
    return float(jax.jit(lambda v: jnp.sum((v - 3.0) ** 2), out_shardings=NamedSharding(self.mesh, P()))(x))


def opt_report(prob, outfile="opt_report.txt"):
  driver = prob.driver
  if not driver.supports["optimization"]:
    return
  # only create report on rank 0
  if jax.process_index() != 0:
    return
  desvars_vals = driver.get_design_var_values()
  rows = [f"{name}: min={v.min():.4f} max={v.max():.4f} mean={v.mean():.4f}" for name, v in desvars_vals.items()]
  os.makedirs(prob.reports_dir, exist_ok=True)
  with open(os.path.join(prob.reports_dir, outfile), "w") as f:
    f.write(f"iterations: {driver.iter_count}\n" + "\n".join(rows))


register_report("optimizer", opt_report, "Summary of optimization", "Problem", "run_driver", "post")


def main():
  x0 = np.array([0.0, 1.0], dtype=np.float32) + 2.0 * jax.process_index()
  prob = Problem(Driver(x0))
  prob.run_driver()
  print(f"RESULT iterations={prob.driver.iter_count}")
  print(f"RESULT objective={prob.objective():.5f}")


if __name__ == "__main__":
  main()

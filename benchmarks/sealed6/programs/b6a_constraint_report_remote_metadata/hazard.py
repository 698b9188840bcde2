# Port to JAX of a dymos MPI hang: the constraint report is built on rank 0 only, but it looks up
# variable metadata with get_io_metadata(get_remote=True), which gathers from every process.
# Source: https://github.com/OpenMDAO/dymos/pull/727 ("fixed mpi hang caused by constraint_report";
#   issue https://github.com/OpenMDAO/dymos/issues/730)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PHASE_NAMES = ("burn1", "burn2")


class Phase:
  def __init__(self, name, num_nodes):
    self.name = name
    self.states = {"deltav": np.linspace(0.0, 1.0, num_nodes, dtype=np.float32) * (1 + len(name))}
    self.units = {"deltav": "DU/TU"}


class Model:
  """A parallel group: each process owns one phase of the trajectory."""

  def __init__(self):
    me = jax.process_index()
    self.local_phases = {PHASE_NAMES[me]: Phase(PHASE_NAMES[me], num_nodes=4)}

  def get_io_metadata(self, get_remote=True):
    meta = {}
    for pname, phase in self.local_phases.items():
      for s, val in phase.states.items():
        meta[f"traj.{pname}.states:{s}"] = {"size": val.size, "units": phase.units[s]}
    if get_remote:
      # every process learns the sizes of the variables owned elsewhere
      local_sizes = np.array([[PHASE_NAMES.index(n.split(".")[1]), m["size"]] for n, m in meta.items()],
                             dtype=np.int32)
      all_sizes = multihost_utils.process_allgather(local_sizes, tiled=True)
      for idx, size in all_sizes:
        meta.setdefault(f"traj.{PHASE_NAMES[idx]}.states:deltav", {"size": int(size), "units": "DU/TU"})
    return meta


class Problem:
  def __init__(self):
    self.model = Model()
    self.constraints = [f"traj.{p}.states:deltav" for p in PHASE_NAMES]
    self.reports_dir = os.path.join(tempfile.gettempdir(), f"b6a_dymos_{os.environ.get('JOB_ID', 'local')}")


def create_constraint_report(prob, fname):
  meta = prob.model.get_io_metadata(get_remote=True)
  lines = [f"{c}: size={meta[c]['size']} units={meta[c]['units']}" for c in prob.constraints]
  with open(fname, "w") as f:
    f.write("\n".join(lines))
  return len(lines)


def run_driver(prob):
  mesh = jax.make_mesh((jax.device_count(),), ("phases",))
  (phase,) = prob.model.local_phases.values()
  local = phase.states["deltav"][-1:]
  final = jax.make_array_from_process_local_data(NamedSharding(mesh, P("phases")), local)
  return float(jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(final))


def run_problem(prob, make_report=True):
  if make_report and jax.process_index() == 0:
    os.makedirs(prob.reports_dir, exist_ok=True)
    create_constraint_report(prob, os.path.join(prob.reports_dir, "constraints.txt"))
  return run_driver(prob)


def main():
  prob = Problem()
  total_deltav = run_problem(prob)
  print(f"RESULT total_deltav={total_deltav:.4f}")


if __name__ == "__main__":
  main()

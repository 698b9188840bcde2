# Port of an Earth2Studio fix to multi-controller JAX (correct look-alike): the ACE2 wrapper builds
# its variable lists with sorted(...) over the sets, so every process has the same coordinate order.
# Source: https://github.com/NVIDIA/earth2studio/pull/948
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import collections
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {
    "in_names": ["DSWRFtoa", "HGTsfc", "land_fraction", "u10m", "v10m", "t2m", "sp", "msl", "tcwv", "z500", "t850"],
    "out_names": ["u10m", "v10m", "t2m", "sp", "msl", "tcwv", "z500", "t850", "PRATEsfc"],
}


class Stepper:

  def __init__(self, config):
    self.config = config

  @property
  def prognostic_names(self):
    return set(self.config["in_names"]) & set(self.config["out_names"])

  @property
  def _input_only_names(self):
    return set(self.config["in_names"]) - set(self.config["out_names"])


class ACE2:

  def __init__(self, stepper, grid=(3, 4)):
    self.stepper = stepper
    self.grid = grid
    self._forcing_vars_fme = sorted(self.stepper._input_only_names)
    self._prog_vars_fme = sorted(self.stepper.prognostic_names)

  def input_coords(self):
    return collections.OrderedDict(variable=np.array(self._prog_vars_fme),
                                   lat=np.arange(self.grid[0]), lon=np.arange(self.grid[1]))

  def __call__(self, member):
    """One step of this process's ensemble member; fields are stacked in input_coords order."""
    out = []
    for name in self._prog_vars_fme:
      rng = np.random.default_rng([sum(map(ord, name)), member])
      out.append((len(name) + 0.1 * rng.normal(size=self.grid)).astype(np.float32))
    return np.stack(out), self.input_coords()


def _encode(names, width=16):
  codes = np.zeros((len(names), width), np.int32)
  for i, n in enumerate(names):
    codes[i, :len(n)] = [ord(c) for c in n]
  return codes


def handshake_dim(coords, dim="variable"):
  """All processes must hold the same coordinate system before their data can be combined."""
  local = _encode(list(coords[dim]))
  everyone = np.asarray(multihost_utils.process_allgather(local))
  for other in everyone:
    if not np.array_equal(other, local):
      raise ValueError(f"Coordinate systems for required dim {dim} are not the same")


def run_ensemble(model):
  data, coords = model(member=jax.process_index())
  handshake_dim(coords)
  members = np.asarray(multihost_utils.process_allgather(data))
  return members.mean(axis=0), coords


def main():
  model = ACE2(Stepper(CONFIG))
  mean, coords = run_ensemble(model)
  for name, field in sorted(zip(coords["variable"], mean)):
    print(f"RESULT ens_mean {name} {float(field.mean()):.5f}")


if __name__ == "__main__":
  main()

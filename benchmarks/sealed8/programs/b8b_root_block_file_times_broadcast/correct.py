# Port of an FMS2/MOM6 restart bug to multi-controller JAX (correct look-alike): every process reads
# the restart times (the helper broadcasts from the root); only the root prints the warning.
# Source: https://github.com/NOAA-GFDL/FMS/issues/761 (fix: https://github.com/mom-ocean/MOM6/pull/1462)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import json
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NAME_LEN = 16


def is_root_pe():
  return jax.process_index() == 0


def mpp_broadcast(value):
  return np.asarray(multihost_utils.broadcast_one_to_all(value))


class FmsNetcdfFile:
  """A restart file read by the I/O root and broadcast to the other processes."""

  def __init__(self, path):
    self.path = path
    self._header = None

  def _read_header(self):
    if self._header is None:
      with open(self.path + ".json") as f:
        self._header = json.load(f)
    return self._header

  def get_unlimited_dimension_name(self):
    buf = np.zeros((NAME_LEN,), np.int32)
    if is_root_pe():
      name = self._read_header()["unlimited"].encode()
      buf[:len(name)] = np.frombuffer(name, np.uint8)
    buf = mpp_broadcast(buf)
    return bytes(int(c) for c in buf if c).decode()

  def read_data(self, name):
    if is_root_pe():
      data = np.load(self.path + f".{name}.npy")
    else:
      data = np.zeros(tuple(self._read_header()["shapes"][name]), np.float32)
    return mpp_broadcast(data)


def get_file_times(fileobj):
  dim = fileobj.get_unlimited_dimension_name()
  return fileobj.read_data(dim)


def restore_state(files, model_time):
  fields = {}
  for fileobj in files:
    times = get_file_times(fileobj)
    if abs(float(times[0]) - model_time) > 1e-6 and is_root_pe():
      print(f"WARNING: restart time {float(times[0])} differs from model time {model_time}")
    for name in ("u", "h"):
      fields[name] = fileobj.read_data(name)
  return fields


def write_restart(step_time=86400.0):
  path = os.path.join(tempfile.gettempdir(),
                      f"b8b_mom_res_{os.environ.get('JOB_ID', 'job')}_{jax.process_index()}")
  rng = np.random.default_rng(4)
  arrays = {"Time": np.array([step_time], np.float32),
            "u": rng.normal(size=(4, 6)).astype(np.float32),
            "h": rng.uniform(1.0, 2.0, size=(4, 6)).astype(np.float32)}
  for k, v in arrays.items():
    np.save(path + f".{k}.npy", v)
  with open(path + ".json", "w") as f:
    json.dump({"unlimited": "Time", "shapes": {k: list(v.shape) for k, v in arrays.items()}}, f)
  return FmsNetcdfFile(path)


def main():
  fields = restore_state([write_restart()], model_time=86400.0)
  print(f"RESULT u_sum {float(fields['u'].sum()):.5f}")
  print(f"RESULT h_mean {float(fields['h'].mean()):.5f}")


if __name__ == "__main__":
  main()

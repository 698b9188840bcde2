# Port of a NetKet report to multi-controller JAX: driver callbacks run on every process and may ask
# the driver to stop, but the stop flag is not combined across processes, so a callback that says
# "stop" on one process only ends that process's loop while the others keep calling collectives.
# Source: https://github.com/netket/netket/issues/651
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def mpi_mean(x):
  return np.asarray(multihost_utils.process_allgather(np.asarray(x, np.float32))).mean(axis=0)


class JsonLog:

  def __init__(self, path):
    self.path = path
    self.data = []

  def __call__(self, step, log_data, state):
    self.data.append({"step": step, **log_data})
    with open(self.path, "w") as f:
      json.dump(self.data, f)


class VMC:
  """Variational Monte Carlo driver: every process samples its own chains."""

  def __init__(self, target=1.5, n_samples=16, lr=0.2):
    self.theta = jnp.float32(0.0)
    self.target, self.n_samples, self.lr = target, n_samples, lr
    self.step_count = 0
    self._rng = np.random.default_rng(1000 + jax.process_index())
    self._local_energies = None
    self._energy_grad = jax.jit(lambda th, x: (0.5 * (x - target) ** 2, (th + 0.0 * x) - target))

  def _forward_and_backward(self):
    samples = np.float32(self.theta) + self._rng.normal(scale=0.6, size=self.n_samples).astype(np.float32)
    e_loc, grad = self._energy_grad(self.theta, jnp.asarray(samples))
    self._local_energies = np.asarray(e_loc)
    self.theta = self.theta - self.lr * jnp.float32(mpi_mean(np.asarray(grad).mean()))
    return {"Energy": float(mpi_mean(self._local_energies.mean()))}

  def estimate(self):
    return float(mpi_mean(np.asarray(0.5 * (self.theta - self.target) ** 2)))

  def run(self, n_iter, out=None, callback=lambda *x: True):
    if jax.process_index() == 0:
      loggers = (JsonLog(out),) if out else ()
    else:
      loggers = ()
    callbacks = callback if isinstance(callback, (list, tuple)) else (callback,)
    callback_stop = False
    for step in range(n_iter):
      log_data = self._forward_and_backward()
      self.step_count += 1
      for cb in callbacks:
        if not cb(step, log_data, self):
          callback_stop = True
      for logger in loggers:
        logger(self.step_count, log_data, self.theta)
      if callback_stop:
        break
    return self


def local_energy_below(threshold):
  def callback(step, log_data, driver):
    return float(np.mean(driver._local_energies)) > threshold
  return callback


def main():
  out = os.path.join(tempfile.gettempdir(), f"b8b_vmc_{os.environ.get('JOB_ID', 'job')}.json")
  driver = VMC().run(n_iter=40, out=out, callback=local_energy_below(0.2))
  print(f"RESULT steps {driver.step_count}")
  print(f"RESULT final_energy {driver.estimate():.5f}")


if __name__ == "__main__":
  main()

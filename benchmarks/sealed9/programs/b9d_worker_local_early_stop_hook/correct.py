# Port of a TF Estimator early-stopping hook under MultiWorkerMirroredStrategy to multi-controller JAX (correct look-alike): the chief's stop decision is broadcast, so all workers leave the loop at the same step.
# Source: https://github.com/tensorflow/estimator/pull/49
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("worker",))
REPL = NamedSharding(MESH, P())


class StopIfNoDecreaseHook:
  """Stop when the eval loss has not decreased for `max_steps_without_decrease` checks."""

  def __init__(self, max_steps_without_decrease, run_every_steps):
    self.patience = max_steps_without_decrease
    self.every = run_every_steps
    self.best = np.inf
    self.bad = 0

  def should_stop(self, step, eval_loss):
    if step % self.every:
      return False
    if eval_loss < self.best - 1e-4:
      self.best, self.bad = eval_loss, 0
    else:
      self.bad += 1
    return self.bad >= self.patience


def worker_data(rank, n=32, d=5):
  rng = np.random.default_rng(rank)
  x = rng.normal(size=(n, d)).astype(np.float32)
  y = (x @ np.linspace(1, -1, d) + rng.normal(scale=0.3 + 0.8 * rank, size=n)).astype(np.float32)
  return x[:24], y[:24], x[24:], y[24:]


@jax.jit
def train_step(w, x, y):
  loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
  return w - 0.05 * g, loss


@jax.jit
def eval_loss(w, x, y):
  return jnp.mean((x @ w - y) ** 2)


def main():
  rank = jax.process_index()
  xtr, ytr, xev, yev = worker_data(rank)
  gx = multihost_utils.host_local_array_to_global_array(xtr, MESH, P("worker"))
  gy = multihost_utils.host_local_array_to_global_array(ytr, MESH, P("worker"))
  w = jax.device_put(jnp.zeros((xtr.shape[1],), jnp.float32), REPL)
  hook = StopIfNoDecreaseHook(max_steps_without_decrease=3, run_every_steps=5)
  step = 0
  while step < 400:
    w, loss = train_step(w, gx, gy)
    step += 1
    local_eval = float(eval_loss(np.asarray(w), xev, yev))
    stop = hook.should_stop(step, local_eval)
    if multihost_utils.broadcast_one_to_all(np.bool_(stop)):
      break
  final = float(train_step(w, gx, gy)[1])
  print(f"RESULT stopped_at {step}")
  print(f"RESULT final_train_loss {final:.5f}")


if __name__ == "__main__":
  main()

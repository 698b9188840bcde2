# Port of a PaddleX multi-card training bug to multi-controller JAX (correct look-alike): evaluation runs on card 0 only and the metrics are logged only where they exist (local_rank 0).
# Source: https://github.com/PaddlePaddle/PaddleX/pull/778
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import logging
import os
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
logging.basicConfig(level=logging.INFO, format="%(message)s")

MESH = Mesh(np.array(jax.devices()), ("card",))


def dict2str(d):
  return ", ".join(f"{k}={v:.4f}" for k, v in d.items())


class Detector:
  def __init__(self):
    self.w = jax.device_put(jnp.zeros((4,), jnp.float32), NamedSharding(MESH, P()))
    self.eval_metrics = None
    self.best_map = -1.0

  def train_epoch(self, x, y):
    @jax.jit
    def step(w, x, y):
      loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
      return w - 0.1 * g, loss
    for _ in range(5):
      self.w, loss = step(self.w, x, y)
    return float(loss)

  def evaluate(self, x_eval, y_eval):
    """Detection models only support single-card evaluation: other cards return None."""
    if jax.process_index() != 0:
      return None
    w = np.asarray(self.w)
    err = np.abs(x_eval @ w - y_eval)
    return OrderedDict(bbox_map=float(np.mean(err < 0.5)), mean_err=float(err.mean()))

  def train(self, num_epochs, x, y, x_eval, y_eval):
    local_rank = jax.process_index()
    for epoch in range(num_epochs):
      loss = self.train_epoch(x, y)
      self.eval_metrics = self.evaluate(x_eval, y_eval)
      if local_rank == 0:
        logging.info(f"[EVAL] epoch {epoch}: loss={loss:.4f}, {dict2str(self.eval_metrics)}")
      if local_rank == 0 and self.eval_metrics["bbox_map"] > self.best_map:
        self.best_map = self.eval_metrics["bbox_map"]
    return loss


def main():
  rng = np.random.default_rng(11 + jax.process_index())
  xl = rng.normal(size=(6, 4)).astype(np.float32)
  yl = (xl @ np.array([0.5, -0.2, 0.1, 0.3], np.float32)).astype(np.float32)
  x = multihost_utils.host_local_array_to_global_array(xl, MESH, P("card"))
  y = multihost_utils.host_local_array_to_global_array(yl, MESH, P("card"))
  x_eval = np.random.default_rng(99).normal(size=(20, 4)).astype(np.float32)
  y_eval = (x_eval @ np.array([0.5, -0.2, 0.1, 0.3], np.float32)).astype(np.float32)
  model = Detector()
  loss = model.train(3, x, y, x_eval, y_eval)
  print(f"RESULT final_loss {loss:.5f}")
  print(f"RESULT w {' '.join(f'{v:.5f}' for v in np.asarray(model.w))}")


if __name__ == "__main__":
  main()

# Port of a PyTorch/XLA report to multi-controller JAX: the "save the best model" branch compares
# the validation accuracy of this process's shard of the validation set, so the processes disagree
# on whether the epoch improved, and only some of them enter the save helper's rendezvous.
# Source: https://github.com/pytorch/xla/issues/2712
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def is_master_ordinal():
  return jax.process_index() == 0


def xm_save(data, path, master_only=True):
  """Like xm.save: writes on the master, then every process meets in a rendezvous."""
  host = jax.tree_util.tree_map(np.asarray, data)
  if not master_only or is_master_ordinal():
    with open(path, "wb") as f:
      pickle.dump(host, f)
  multihost_utils.sync_global_devices("torch_xla.core.xla_model.save")


class DistributedSampler:

  def __init__(self, n):
    self.n = n

  def indices(self):
    return np.arange(jax.process_index(), self.n, jax.process_count())


def make_data(n, dim, seed):
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, dim)).astype(np.float32)
  y = (x @ np.linspace(-1.0, 1.0, dim) + 0.8 * rng.normal(size=n) > 0).astype(np.int32)
  return x, y


class Model:

  def __init__(self, dim):
    self.w = jnp.asarray(np.random.default_rng(7).normal(size=dim), jnp.float32)
    self._grad = jax.jit(jax.grad(lambda w, x, y: jnp.mean(jax.nn.softplus(-(2 * y - 1) * (x @ w)))))
    self._predict = jax.jit(lambda w, x: (x @ w > 0).astype(jnp.int32))

  def state_dict(self):
    return {"w": self.w}

  def train_epoch(self, x, y, lr=0.3):
    g = np.asarray(self._grad(self.w, x, y))
    g = np.asarray(multihost_utils.process_allgather(g)).mean(axis=0)  # optimizer step all-reduce
    self.w = self.w - lr * jnp.asarray(g)

  def accuracy(self, x, y):
    return float(np.mean(np.asarray(self._predict(self.w, x)) == y))


def train_model(epochs=6, dim=5):
  train_x, train_y = make_data(64, dim, seed=1)
  valid_x, valid_y = make_data(30, dim, seed=2)
  tr = DistributedSampler(len(train_x)).indices()
  va = DistributedSampler(len(valid_x)).indices()
  model = Model(dim)
  best_file = os.path.join(tempfile.gettempdir(), f"b8b_best_{os.environ.get('JOB_ID', 'job')}.pkl")
  acc_max, saves = -1.0, 0
  for _ in range(epochs):
    model.train_epoch(train_x[tr], train_y[tr])
    acc = model.accuracy(valid_x[va], valid_y[va])
    if acc > acc_max:
      acc_max = acc
      xm_save(model.state_dict(), best_file)
      saves += 1
  return model, saves


def main():
  model, saves = train_model()
  print(f"RESULT w {np.round(np.asarray(model.w), 5).tolist()}")
  print(f"RESULT best_saves {saves}")


if __name__ == "__main__":
  main()

# Port of a PyTorch/XLA report to multi-controller JAX: saving on TPU pods hangs because the save
# helper already contains a rendezvous, and the caller adds its own rendezvous around it, taken a
# different number of times on the master process and on the others.
# Source: https://github.com/pytorch/xla/issues/2224
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


def rendezvous(tag):
  multihost_utils.sync_global_devices(tag)


def save(data, path, master_only=True):
  """Like xm.save: every process must call it; it writes on the master and then rendezvouses."""
  host = jax.tree_util.tree_map(np.asarray, data)
  if not master_only or is_master_ordinal():
    with open(path, "wb") as f:
      pickle.dump(host, f)
  rendezvous("torch_xla.core.xla_model.save")


class Trainer:

  def __init__(self, run_dir, dim=4):
    self.run_dir = run_dir
    rng = np.random.default_rng(0)
    self.params = {"w": jnp.asarray(rng.normal(size=(dim,)), jnp.float32)}
    self.opt_state = {"m": jnp.zeros((dim,), jnp.float32)}
    self._step = jax.jit(lambda p, g: jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g))

  def train_step(self, batch):
    local = np.asarray(batch, np.float32)
    grad = multihost_utils.process_allgather(local).mean(axis=0)
    self.params = self._step(self.params, {"w": jnp.asarray(grad)})

  def save_best(self):
    if not is_master_ordinal():
      rendezvous("save_model")
    if is_master_ordinal():
      os.makedirs(self.run_dir, exist_ok=True)
      save(self.params, os.path.join(self.run_dir, "model_best.pkl"))
      save(self.opt_state, os.path.join(self.run_dir, "optimizer_best.pkl"))
    if is_master_ordinal():
      rendezvous("save_model")


def main():
  run_dir = os.path.join(tempfile.gettempdir(), f"b8b_xla_save_{os.environ.get('JOB_ID', 'job')}")
  trainer = Trainer(run_dir)
  for epoch in range(3):
    batch = np.full((4,), epoch + jax.process_index(), np.float32)
    trainer.train_step(batch)
    trainer.save_best()
  w = np.asarray(trainer.params["w"])
  print(f"RESULT w {np.round(w, 5).tolist()}")


if __name__ == "__main__":
  main()

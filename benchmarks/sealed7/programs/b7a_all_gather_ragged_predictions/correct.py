# Port of the PyTorch Lightning proposal to multi-controller JAX: before all-gathering predictions
# whose count differs between processes, gather the lengths, pad every process's array to the
# longest, gather the padded arrays and cut each process's part back to its own length.
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/7773
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class DistributedSampler:
  """Splits the indices over processes without padding (drop_last=False, no repeat)."""

  def __init__(self, num_samples):
    self.num_samples = num_samples

  def __iter__(self):
    return iter(range(jax.process_index(), self.num_samples, jax.process_count()))


class ClassifierModule:

  def __init__(self, dim=5, classes=3):
    rng = np.random.default_rng(11)
    self.w = jnp.asarray(rng.normal(size=(dim, classes)), jnp.float32)
    self._logits = jax.jit(lambda w, x: x @ w)
    self._val_preds = []

  def all_gather(self, data):
    lengths = np.asarray(multihost_utils.process_allgather(np.array(data.shape[0], np.int32)))
    lengths = lengths.reshape(-1)
    padded = np.zeros((int(lengths.max()),) + data.shape[1:], data.dtype)
    padded[:data.shape[0]] = data
    gathered = np.asarray(multihost_utils.process_allgather(padded))
    return np.concatenate([gathered[p, :int(n)] for p, n in enumerate(lengths)], axis=0)

  def validation_step(self, batch):
    x, y = batch
    preds = np.asarray(jnp.argmax(self._logits(self.w, jnp.asarray(x)), axis=-1))
    self._val_preds.append(np.stack([preds, y], axis=1))

  def on_validation_epoch_end(self):
    local = np.concatenate(self._val_preds, axis=0).astype(np.int32)
    gathered = np.asarray(self.all_gather(local))
    self._val_preds.clear()
    return float(np.mean(gathered[:, 0] == gathered[:, 1])), int(gathered.shape[0])


def make_val_set(n=11, dim=5, classes=3):
  rng = np.random.default_rng(5)
  return rng.normal(size=(n, dim)).astype(np.float32), rng.integers(0, classes, size=n)


def validation_loop(module, data, batch_size=2):
  xs, ys = data
  idx = list(DistributedSampler(len(xs)))
  for start in range(0, len(idx), batch_size):
    b = idx[start:start + batch_size]
    module.validation_step((xs[b], ys[b]))
  return module.on_validation_epoch_end()


def main():
  module = ClassifierModule()
  acc, n = validation_loop(module, make_val_set())
  print(f"RESULT val_acc {acc:.6f}")
  print(f"RESULT val_count {n}")


if __name__ == "__main__":
  main()

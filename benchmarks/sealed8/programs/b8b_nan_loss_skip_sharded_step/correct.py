# Port of an MMF change to multi-controller JAX (correct look-alike): every process always reduces its
# gradients; the optimizer skips the update when the reduced gradients are not finite (all agree).
# Source: https://github.com/facebookresearch/mmf/pull/1073
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class TrainingConfig:
  max_updates: int = 6
  lr: float = 0.1
  skip_batch_on_nan_losses: bool = True


class ShardedSGD:
  """Optimizer state sharding: each process updates its slice, then the slices are all-gathered."""

  def __init__(self, params, lr):
    self.params = params
    self.lr = lr
    n = params.shape[0] // jax.process_count()
    self.lo, self.hi = jax.process_index() * n, (jax.process_index() + 1) * n

  def step(self, grads):
    if not np.all(np.isfinite(grads)):  # reduced gradients: the same decision on every process
      grads = np.zeros_like(grads)
    shard = self.params[self.lo:self.hi] - self.lr * grads[self.lo:self.hi]
    self.params = np.asarray(multihost_utils.process_allgather(shard, tiled=True))


class Trainer:

  def __init__(self, config, dim=4):
    self.config = config
    self.optimizer = ShardedSGD(np.full((dim,), 0.5, np.float32), config.lr)
    self._loss_and_grad = jax.jit(jax.value_and_grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))
    self.skipped = 0

  def _backward(self, grads):
    return np.asarray(multihost_utils.process_allgather(np.asarray(grads))).mean(axis=0)

  def training_step(self, batch):
    x, y = batch
    loss, grads = self._loss_and_grad(jnp.asarray(self.optimizer.params), jnp.asarray(x), jnp.asarray(y))
    reduced = self._backward(grads)
    if self.config.skip_batch_on_nan_losses and not np.all(np.isfinite(reduced)):
      self.skipped += 1
    self.optimizer.step(reduced)

  def train(self, batches):
    for batch in batches[:self.config.max_updates]:
      self.training_step(batch)
    return self.optimizer.params


def make_batches(n, dim=4, bs=4):
  rng = np.random.default_rng(20 + jax.process_index())
  batches = []
  for i in range(n):
    x = rng.normal(size=(bs, dim)).astype(np.float32)
    y = x.sum(axis=1).astype(np.float32)
    if jax.process_index() == 1 and i == 2:
      x[0, 1] = np.inf  # a corrupt record in this process's shard of the data
    batches.append((x, y))
  return batches


def main():
  trainer = Trainer(TrainingConfig())
  params = trainer.train(make_batches(6))
  print(f"RESULT params {np.round(params, 5).tolist()}")
  print(f"RESULT skipped_total {int(multihost_utils.process_allgather(np.int32(trainer.skipped)).sum())}")


if __name__ == "__main__":
  main()

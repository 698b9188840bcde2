# Port of a TorchSpec fix to multi-controller JAX: the per-process DataFetcher no longer drops a
# sample whose loss mask has too few supervised tokens; it zeroes the mask in place and keeps the
# sample, so every process runs one micro-batch (one FSDP all-gather) per dispatched sample.
# Source: https://github.com/lightseekorg/TorchSpec/issues/126
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DIM = 8


@dataclass
class TrainConfig:
  draft_accumulation_steps: int = 2
  min_loss_tokens: int = 4
  num_steps: int = 4
  lr: float = 0.05


class DataFetcher:
  """Turns this process's dispatched samples into micro-batches."""

  def __init__(self, config):
    self._min_loss_tokens = config.min_loss_tokens
    self.skip_count = 0

  def _compute_loss_mask(self, data):
    return data["loss_mask"]

  def _should_skip_for_loss_mask(self, data):
    mask = self._compute_loss_mask(data)
    if mask.sum() == 0:
      return True
    return self._min_loss_tokens > 0 and mask.sum() < self._min_loss_tokens

  def micro_batches(self, dispatched):
    for data in dispatched:
      if self._should_skip_for_loss_mask(data):
        self.skip_count += 1
        data["loss_mask"] = np.zeros_like(data["loss_mask"])  # contributes 0 loss
      yield data


def dispatch(step, config):
  """The controller hands every process its samples for this step (per process, per step)."""
  rng = np.random.default_rng(100 * step + jax.process_index())
  samples = []
  for i in range(config.draft_accumulation_steps):
    mask = (rng.random(DIM) < 0.7).astype(np.float32)
    if step == 1 and i == 1 and jax.process_index() == 1:
      mask[:] = 0.0
      mask[0] = 1.0  # a sample with a single supervised token
    samples.append({"x": rng.normal(size=DIM).astype(np.float32), "loss_mask": mask})
  return samples


class FSDPDraftTrainer:

  def __init__(self, config):
    self.config = config
    self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("fsdp",))
    self.sharding = NamedSharding(self.mesh, P("fsdp"))
    local = np.full((DIM // jax.process_count(),), 0.5, np.float32)
    self.w_shard = jax.make_array_from_process_local_data(self.sharding, local)
    self.fetcher = DataFetcher(config)

  def _all_gather_params(self):
    # FSDP FULL_SHARD: unshard the weights before every micro-batch's forward.
    return np.asarray(multihost_utils.process_allgather(self.w_shard, tiled=True))

  def _micro_step(self, data):
    w = self._all_gather_params()
    pred = w * data["x"]
    err = data["loss_mask"] * (pred - 1.0)
    loss = float(np.sum(err ** 2) / max(data["loss_mask"].sum(), 1.0))
    grad = 2 * err * data["x"] / max(data["loss_mask"].sum(), 1.0)
    return loss, grad

  def train_step(self, step):
    grad_acc = np.zeros((DIM,), np.float32)
    losses = []
    for data in self.fetcher.micro_batches(dispatch(step, self.config)):
      loss, grad = self._micro_step(data)
      grad_acc += grad
      losses.append(loss)
    # Reduce-scatter of the accumulated gradients, then the sharded update.
    mean_grad = np.asarray(multihost_utils.process_allgather(grad_acc)).mean(axis=0)
    lo = jax.process_index() * (DIM // jax.process_count())
    new_local = np.asarray(self.w_shard.addressable_shards[0].data) - self.config.lr * mean_grad[lo:lo + DIM // jax.process_count()]
    self.w_shard = jax.make_array_from_process_local_data(self.sharding, new_local.astype(np.float32))
    return float(np.mean(losses)) if losses else 0.0

  def train(self):
    return [self.train_step(step) for step in range(self.config.num_steps)]


def main():
  trainer = FSDPDraftTrainer(TrainConfig())
  trainer.train()
  w = np.asarray(multihost_utils.process_allgather(trainer.w_shard, tiled=True))
  print(f"RESULT w {np.round(w, 5).tolist()}")


if __name__ == "__main__":
  main()

# Port of a SimpleTuner bug to multi-controller JAX: the aspect buckets are split between processes
# without padding, so a bucket with an odd number of images gives the processes different shares;
# each process then recalculates max_train_steps from its own bucket counts and process 0 has more
# steps: it waits alone in the per-step gather after the other process has left the training loop.
# Source: https://github.com/bghira/SimpleTuner/pull/1391
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Accelerator:

  def __init__(self):
    self.num_processes = jax.process_count()
    self.process_index = jax.process_index()

  def split_between_processes(self, inputs, apply_padding=False):
    per_proc, rem = divmod(len(inputs), self.num_processes)
    start = self.process_index * per_proc + min(self.process_index, rem)
    end = start + per_proc + (1 if self.process_index < rem else 0)
    mine = list(inputs[start:end])
    if apply_padding:
      target = math.ceil(len(inputs) / self.num_processes)
      mine += [inputs[-1]] * (target - len(mine))
    return mine

  def gather(self, x):
    return multihost_utils.process_allgather(x)


class BucketMetadata:

  def __init__(self, buckets, accelerator):
    self.aspect_ratio_bucket_indices = buckets
    self.accelerator = accelerator

  def split_buckets_between_processes(self, train_batch_size, gradient_steps=1):
    effective_batch_size = train_batch_size * gradient_steps
    for bucket, images in self.aspect_ratio_bucket_indices.items():
      trimmed_images = images[:len(images) - len(images) % effective_batch_size]
      self.aspect_ratio_bucket_indices[bucket] = self.accelerator.split_between_processes(
          trimmed_images)


class Trainer:

  def __init__(self, metadata, train_batch_size=1, num_epochs=1):
    self.metadata = metadata
    self.accelerator = metadata.accelerator
    self.train_batch_size = train_batch_size
    self.num_epochs = num_epochs
    self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    self.w = jnp.zeros((4,), jnp.float32)
    self._update = jax.jit(self._train_step)
    self.max_train_steps = None

  @staticmethod
  def _train_step(w, x):
    loss, g = jax.value_and_grad(lambda p: jnp.mean((x @ p - 1.0) ** 2))(w)
    return w - 0.1 * g, loss

  def _recalculate_training_steps(self):
    per_epoch = sum(len(v) // self.train_batch_size
                    for v in self.metadata.aspect_ratio_bucket_indices.values())
    self.max_train_steps = self.num_epochs * per_epoch

  def _batches(self):
    while True:
      for bucket, images in sorted(self.metadata.aspect_ratio_bucket_indices.items()):
        for i in range(0, len(images) - self.train_batch_size + 1, self.train_batch_size):
          yield np.stack([np.full((4,), img * 0.01, np.float32)
                          for img in images[i:i + self.train_batch_size]])

  def train(self):
    self._recalculate_training_steps()
    sharding = NamedSharding(self.mesh, P("data"))
    batches = self._batches()
    logged = []
    for step in range(self.max_train_steps):
      x = jax.make_array_from_process_local_data(sharding, next(batches))
      self.w, loss = self._update(self.w, x)
      logged.append(float(np.mean(self.accelerator.gather(np.asarray(loss)))))
    return logged


def main():
  buckets = {"1.0": list(range(0, 7)), "0.75": list(range(10, 14)), "1.5": list(range(20, 25))}
  metadata = BucketMetadata(buckets, Accelerator())
  metadata.split_buckets_between_processes(train_batch_size=1)
  trainer = Trainer(metadata)
  logged = trainer.train()
  print(f"RESULT max_train_steps {trainer.max_train_steps}")
  print(f"RESULT losses {[round(v, 5) for v in logged]}")
  print(f"RESULT w {np.round(np.asarray(trainer.w), 5).tolist()}")


if __name__ == "__main__":
  main()

# Port of a DALI sharded-reader problem to multi-controller JAX (correct look-alike): the reader is built with pad_last_batch=True, so every shard is padded to the same size and yields the same batches.
# Source: https://github.com/NVIDIA/DALI/pull/1831
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("gpu",))
DATASET_SIZE = 21
BATCH = 5


class FileReader:
  """Reader op: shard `shard_id` of `num_shards` contiguous pieces, as DALI computes them."""

  def __init__(self, size, shard_id, num_shards, pad_last_batch=False):
    self.begin = size * shard_id // num_shards
    self.end = size * (shard_id + 1) // num_shards
    self.size, self.num_shards, self.pad_last_batch = size, num_shards, pad_last_batch

  def shard_size(self):
    if self.pad_last_batch:
      return math.ceil(self.size / self.num_shards)
    return self.end - self.begin

  def sample(self, i):
    idx = min(self.begin + i, self.end - 1) if self.pad_last_batch else self.begin + i
    return np.array([idx, idx % 3], np.float32)


class GenericIterator:
  def __init__(self, reader, batch_size):
    self.reader, self.batch_size = reader, batch_size

  def __iter__(self):
    n = self.reader.shard_size()
    for start in range(0, n, self.batch_size):
      rows = [self.reader.sample(i) for i in range(start, start + self.batch_size) if i < n]
      while len(rows) < self.batch_size:
        rows.append(rows[-1])
      yield np.stack(rows)


@jax.jit
def step(w, batch):
  x, y = batch[:, :1] / 20.0, batch[:, 1]
  loss, g = jax.value_and_grad(lambda w: jnp.mean((x[:, 0] * w[0] + w[1] - y) ** 2))(w)
  return w - 0.2 * g, loss


def main():
  reader = FileReader(DATASET_SIZE, jax.process_index(), jax.process_count(), pad_last_batch=True)
  loader = GenericIterator(reader, BATCH)
  w = jax.device_put(jnp.zeros((2,), jnp.float32), NamedSharding(MESH, P()))
  for epoch in range(2):
    n_batches = 0
    for batch in loader:
      gb = multihost_utils.host_local_array_to_global_array(batch, MESH, P("gpu"))
      w, loss = step(w, gb)
      n_batches += 1
  print(f"RESULT batches_per_epoch {n_batches}")
  print(f"RESULT w {float(w[0]):.5f} {float(w[1]):.5f} loss {float(loss):.5f}")


if __name__ == "__main__":
  main()

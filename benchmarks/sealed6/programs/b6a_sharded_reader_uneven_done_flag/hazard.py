# Port to JAX of an AllenNLP distributed-training hang: each worker reads its own shard files, the
# shards hold different numbers of instances, and the worker with more batches enters the gradient
# all-reduce of the train step alone.
# Source: https://github.com/allenai/allennlp/pull/3781 ("Fix hang, make sharded reader rank aware")
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import glob
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class ShardedDatasetReader:
  """Reads the shard files of this worker (rank-aware): shards[rank::world_size]."""

  def __init__(self, file_pattern, batch_size):
    self.file_pattern, self.batch_size = file_pattern, batch_size

  def read(self):
    shards = sorted(glob.glob(self.file_pattern))
    for shard in shards[jax.process_index()::jax.process_count()]:
      rows = np.loadtxt(shard, dtype=np.float32, ndmin=2)
      for row in rows:
        yield row

  def batches(self):
    buf = []
    for instance in self.read():
      buf.append(instance)
      if len(buf) == self.batch_size:
        yield np.stack(buf)
        buf = []


class Trainer:
  def __init__(self, reader, mesh):
    self.reader, self.mesh = reader, mesh
    self.sharding = NamedSharding(mesh, P("workers"))
    self.params = jnp.zeros((3,), jnp.float32)
    self._grad_step = jax.jit(
        lambda p, b: (p - 0.1 * jnp.mean(p - b, axis=0), jnp.mean((b - p) ** 2)),
        out_shardings=(NamedSharding(mesh, P()), NamedSharding(mesh, P())))

  def train_epoch(self):
    num_batches, loss = 0, 0.0
    for batch in self.reader.batches():
      global_batch = jax.make_array_from_process_local_data(self.sharding, batch)
      self.params, loss = self._grad_step(self.params, global_batch)
      num_batches += 1
    return num_batches, float(loss)


def write_shards(root):
  if jax.process_index() == 0:
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    for i, n in enumerate([8, 6, 4, 4]):  # shard sizes differ, as real shard files do
      np.savetxt(os.path.join(root, f"shard_{i:02d}.txt"), rng.normal(size=(n, 3)) + i)
  multihost_utils.sync_global_devices("shards_written")


def main():
  root = os.path.join(tempfile.gettempdir(), f"b6a_shards_{os.environ.get('JOB_ID', 'local')}")
  write_shards(root)
  mesh = jax.make_mesh((jax.device_count(),), ("workers",))
  trainer = Trainer(ShardedDatasetReader(os.path.join(root, "shard_*.txt"), batch_size=2), mesh)
  for epoch in range(2):
    num_batches, loss = trainer.train_epoch()
    print(f"RESULT epoch={epoch} loss={loss:.5f}")
  print(f"RESULT params={np.round(np.asarray(trainer.params.addressable_data(0)), 5).tolist()}")


if __name__ == "__main__":
  main()

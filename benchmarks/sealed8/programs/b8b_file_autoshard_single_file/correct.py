# Port of a TensorFlow MultiWorkerMirroredStrategy report to multi-controller JAX (correct
# look-alike): the pipeline is sharded by DATA, so every worker gets every other record of the file.
# Source: https://github.com/tensorflow/tensorflow/issues/35878
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import dataclasses
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class DistributeOptions:
  auto_shard_policy: str = "FILE"  # FILE, DATA or OFF


class ShardedFileDataset:

  def __init__(self, files, batch_size, options=None):
    self.files = list(files)
    self.batch_size = batch_size
    self.options = options or DistributeOptions()

  def _shard(self):
    idx, count = jax.process_index(), jax.process_count()
    if self.options.auto_shard_policy == "FILE":
      return [np.load(f) for f in self.files[idx::count]], slice(None)
    if self.options.auto_shard_policy == "DATA":
      return [np.load(f) for f in self.files], slice(idx, None, count)
    return [np.load(f) for f in self.files], slice(None)

  def __iter__(self):
    arrays, rows = self._shard()
    if not arrays:
      return
    data = np.concatenate(arrays, axis=0)[rows]
    for start in range(0, len(data) - self.batch_size + 1, self.batch_size):
      yield data[start:start + self.batch_size]


def write_mnist_like_single_file(n=24, dim=4):
  rng = np.random.default_rng(3)
  path = os.path.join(tempfile.gettempdir(),
                      f"b8b_tfds_{os.environ.get('JOB_ID', 'job')}_{jax.process_index()}.npy")
  np.save(path, rng.normal(size=(n, dim)).astype(np.float32))
  return [path]


def fit(dataset, epochs=2, dim=4):
  mesh = jax.make_mesh((jax.device_count(),), ("workers",))
  w = jnp.zeros((dim,), jnp.float32)
  step = jax.jit(lambda w, x: w + 0.01 * jnp.mean(x, axis=0), out_shardings=NamedSharding(mesh, P()))
  steps = 0
  for _ in range(epochs):
    for local_batch in dataset:
      x = multihost_utils.host_local_array_to_global_array(local_batch, mesh, P("workers"))
      w = step(w, x)
      steps += 1
  return np.asarray(multihost_utils.process_allgather(w, tiled=True)), steps


def main():
  files = write_mnist_like_single_file()
  dataset = ShardedFileDataset(files, batch_size=4, options=DistributeOptions(auto_shard_policy="DATA"))
  w, steps = fit(dataset)
  print(f"RESULT weights {np.round(w, 5).tolist()}")
  print(f"RESULT steps {steps}")


if __name__ == "__main__":
  main()

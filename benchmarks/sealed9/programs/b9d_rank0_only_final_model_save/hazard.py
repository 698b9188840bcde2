# Port of a RayDP TF-estimator bug to multi-controller JAX: the final multi-worker model.save runs only on world rank 0, but saving the distributed variables needs every worker.
# Source: https://github.com/ray-project/raydp/pull/447
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import json
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("worker",))
SHARDED = NamedSharding(MESH, P("worker"))
REPL = NamedSharding(MESH, P())


class MultiWorkerModel:
  def __init__(self, n_features=8, n_out=2):
    kernel = np.linspace(-0.5, 0.5, n_features * n_out, dtype=np.float32).reshape(n_features, n_out)
    self.variables = {"kernel": jax.device_put(kernel, SHARDED),
                      "bias": jax.device_put(np.zeros((n_out,), np.float32), REPL)}

  def fit(self, x, y, epochs):
    @jax.jit
    def step(v, x, y):
      loss, g = jax.value_and_grad(lambda v: jnp.mean((x @ v["kernel"] + v["bias"] - y) ** 2))(v)
      return jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, v, g), loss
    history = []
    for _ in range(epochs):
      self.variables, loss = step(self.variables, x, y)
      history.append(float(loss))
    return history

  def save(self, path):
    """Like model.save(path, save_format='tf'): materialise every variable on the host and write it."""
    os.makedirs(path, exist_ok=True)
    host = {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in self.variables.items()}
    np.savez(os.path.join(path, "variables.npz"), **host)
    return float(sum(np.abs(a).sum() for a in host.values()))


def train_func(config):
  rank = jax.process_index()
  rng = np.random.default_rng(rank)
  x = rng.normal(size=(16, 8)).astype(np.float32)
  y = rng.normal(size=(16, 2)).astype(np.float32)
  gx = multihost_utils.host_local_array_to_global_array(x, MESH, P("worker"))
  gy = multihost_utils.host_local_array_to_global_array(y, MESH, P("worker"))
  model = MultiWorkerModel()
  history = model.fit(gx, gy, config["epochs"])
  checkpoint = None
  temp_checkpoint_dir = tempfile.mkdtemp(prefix=f"mcjax_sealed9_raydp_{os.environ.get('JOB_ID', 'job')}_")
  if rank == 0:
    model.save(temp_checkpoint_dir)
    checkpoint = {"path": temp_checkpoint_dir}
  multihost_utils.sync_global_devices("report")
  shutil.rmtree(temp_checkpoint_dir, ignore_errors=True)
  return {"loss": history[-1], "checkpoint": checkpoint is not None}


def main():
  result = train_func({"epochs": 6})
  print(f"RESULT loss {result['loss']:.5f}")
  print(f"RESULT config {json.dumps({'epochs': 6})}")


if __name__ == "__main__":
  main()

# Port of a tf.keras multi-worker checkpoint report to multi-controller JAX: a custom checkpoint callback runs only on the chief, but reading the sharded weights back to the host is itself a cross-worker gather.
# Source: https://github.com/tensorflow/tensorflow/issues/31070
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("worker",))
ROW_SHARDED = NamedSharding(MESH, P("worker"))
IS_CHIEF = jax.process_index() == 0


class CustomCheckpoint:
  """Keras-style callback: on_epoch_end writes the weights to <dir>/epoch_<n>.npz."""

  def __init__(self, ckpt_dir):
    self.ckpt_dir = ckpt_dir
    os.makedirs(ckpt_dir, exist_ok=True)

  def get_weights(self, params):
    return {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in params.items()}

  def on_epoch_end(self, epoch, params, logs):
    weights = self.get_weights(params)
    np.savez(os.path.join(self.ckpt_dir, f"epoch_{epoch}.npz"), **weights)
    with open(os.path.join(self.ckpt_dir, "latest.json"), "w") as f:
      json.dump({"epoch": epoch, **logs}, f)


def init_params():
  w = np.arange(16, dtype=np.float32).reshape(8, 2) / 16.0
  return {"dense": jax.device_put(w, ROW_SHARDED)}


@jax.jit
def train_step(params, x, y):
  def loss_fn(p):
    return jnp.mean((x @ p["dense"] - y) ** 2)
  loss, g = jax.value_and_grad(loss_fn)(params)
  return jax.tree_util.tree_map(lambda p, gp: p - 0.1 * gp, params, g), loss


def main():
  job = os.environ.get("JOB_ID", "job")
  ckpt_dir = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_chief_ckpt", job)
  rng = np.random.default_rng(3)
  x = jnp.asarray(rng.normal(size=(16, 8)).astype(np.float32))
  y = jnp.asarray(rng.normal(size=(16, 2)).astype(np.float32))
  params = init_params()
  callbacks = [CustomCheckpoint(ckpt_dir)] if IS_CHIEF else []
  for epoch in range(3):
    for _ in range(4):
      params, loss = train_step(params, x, y)
    logs = {"loss": round(float(loss), 6)}
    for cb in callbacks:
      cb.on_epoch_end(epoch, params, logs)
  multihost_utils.sync_global_devices("training_done")
  print(f"RESULT final_loss {float(loss):.5f}")
  print(f"RESULT dense_sum {float(jnp.sum(params['dense'])):.5f}")


if __name__ == "__main__":
  main()

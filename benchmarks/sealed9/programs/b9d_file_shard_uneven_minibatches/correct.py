# Port of a PaddleClas multi-card reader bug to multi-controller JAX (correct look-alike): the image list is cut to a multiple of trainers x batch size before the split, so every trainer runs the same minibatches.
# Source: https://github.com/PaddlePaddle/PaddleClas/pull/15
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

CONFIG = {"batch_size": 4, "epochs": 2, "num_images": 33, "feat": 6, "classes": 3}
MESH = Mesh(np.array(jax.devices()), ("dp",))


def write_file_list(root, n):
  """train_list.txt: one '<image_id> <label>' per line, shared by every trainer."""
  os.makedirs(root, exist_ok=True)
  path = os.path.join(root, "train_list.txt")
  if jax.process_index() == 0:
    with open(path, "w") as f:
      for i in range(n):
        f.write(f"img_{i:04d}.jpg {i % CONFIG['classes']}\n")
  multihost_utils.sync_global_devices("file_list_written")
  return path


def decode(line):
  name, label = line.split()
  idx = int(name[4:8])
  feat = np.sin(np.arange(CONFIG["feat"], dtype=np.float32) * (idx + 1) / 7.0)
  return feat, int(label)


def reader(path, trainer_id, trainers_num, batch_size):
  with open(path) as f:
    full_lines = [ln.strip() for ln in f if ln.strip()]
  per_trainer = len(full_lines) // (trainers_num * batch_size) * batch_size
  lines = full_lines[trainer_id::trainers_num][:per_trainer]
  for start in range(0, len(lines), batch_size):
    chunk = [decode(ln) for ln in lines[start:start + batch_size]]
    if len(chunk) < batch_size:
      chunk += [chunk[-1]] * (batch_size - len(chunk))
    yield np.stack([c[0] for c in chunk]), np.array([c[1] for c in chunk], np.int32)


def global_batch(x):
  return multihost_utils.host_local_array_to_global_array(x, MESH, P("dp"))


@jax.jit
def train_step(w, x, y):
  def loss_fn(w):
    logits = x @ w
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))
  loss, g = jax.value_and_grad(loss_fn)(w)
  return w - 0.5 * g, loss


def main():
  job = os.environ.get("JOB_ID", "job")
  root = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_file_shard", job)
  path = write_file_list(root, CONFIG["num_images"])
  w = jax.device_put(jnp.zeros((CONFIG["feat"], CONFIG["classes"])), NamedSharding(MESH, P()))
  history = []
  for epoch in range(CONFIG["epochs"]):
    for x, y in reader(path, jax.process_index(), jax.process_count(), CONFIG["batch_size"]):
      w, loss = train_step(w, global_batch(x), global_batch(y))
    history.append(float(loss))
  print(f"RESULT epoch_losses {json.dumps([round(l, 5) for l in history])}")
  print(f"RESULT w_norm {float(jnp.linalg.norm(w)):.5f}")


if __name__ == "__main__":
  main()

# Port of a MindOCR ModelArts-adapter bug to multi-controller JAX: the per-node data copy is done when `rank_id % 8 == 0`, which is not the first rank of every node, so some nodes wait forever for their copy.
# Source: https://github.com/mindspore-lab/mindocr/issues/582
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PROCS_PER_NODE = int(os.environ.get("PROCS_PER_NODE", "1"))  # launcher setting: processes started per node
JOB = os.environ.get("JOB_ID", "job")
ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_node_leader", JOB)
MESH = Mesh(np.array(jax.devices()), ("data",))


def node_cache_dir(rank_id):
  return os.path.join(ROOT, f"node{rank_id // PROCS_PER_NODE}", "cache")


def sync_data(src_records, dst_dir):
  os.makedirs(dst_dir, exist_ok=True)
  np.save(os.path.join(dst_dir, "train.npy"), src_records)
  open(os.path.join(dst_dir, "_SUCCESS"), "w").close()


def wait_for_copy(dst_dir, timeout_s=20.0):
  t0 = time.time()
  while not os.path.exists(os.path.join(dst_dir, "_SUCCESS")):
    if time.time() - t0 > timeout_s:
      raise TimeoutError(f"data copy to {dst_dir} never finished")
    time.sleep(0.2)


def modelarts_setup(rank_id):
  """Copy the OBS dataset to the node-local cache once per node; others on the node wait."""
  dst = node_cache_dir(rank_id)
  records = np.arange(40, dtype=np.float32).reshape(20, 2) / 10.0
  if rank_id % 8 == 0:
    sync_data(records, dst)
  else:
    wait_for_copy(dst)
  return dst


@jax.jit
def fit_step(w, x):
  loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - 1.0) ** 2))(w)
  return w - 0.1 * g, loss


def main():
  rank_id = jax.process_index()
  cache = modelarts_setup(rank_id)
  local = np.load(os.path.join(cache, "train.npy"))
  shard = local[rank_id::jax.process_count()][:8]
  gx = multihost_utils.host_local_array_to_global_array(shard, MESH, P("data"))
  w = jax.device_put(jnp.zeros((2,), jnp.float32), NamedSharding(MESH, P()))
  for _ in range(10):
    w, loss = fit_step(w, gx)
  print(f"RESULT loss {float(loss):.5f}")
  print(f"RESULT w {float(w[0]):.5f} {float(w[1]):.5f}")


if __name__ == "__main__":
  main()

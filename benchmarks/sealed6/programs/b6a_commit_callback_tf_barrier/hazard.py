# The commit callback waits on a global barrier for every worker's TF-savable upload, but the async
# manager runs on_commit_callback on process 0 only: process 0 waits at the barrier alone.
# Source: https://github.com/apple/axlearn/commit/85002a5be0d5b76cfbbaa3775de15a83cabdd426
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import json
import os
import shutil
import tempfile
import threading
from concurrent import futures

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import distributed
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
TIMEOUT_MS = 60_000


class AsyncManager:
  """Like jax's GlobalAsyncCheckpointManager: writes in a thread, then process 0 commits."""

  def __init__(self):
    self._thread, self._count = None, 0

  def serialize(self, arrays, paths, *, on_commit_callback):
    self._count += 1
    self._thread = threading.Thread(target=self._thread_func,
                                    args=(arrays, paths, on_commit_callback, self._count))
    self._thread.start()

  def _thread_func(self, arrays, paths, on_commit_callback, count):
    client = distributed.global_state.client
    for arr, path in zip(arrays, paths):
      for shard in arr.addressable_shards:
        np.save(f"{path}.shard{shard.index[0].start or 0}.npy", np.asarray(shard.data))
    key = f"b6a_ckpt_commit_{count}"
    client.wait_at_barrier(key, TIMEOUT_MS)
    if jax.process_index() == 0:
      on_commit_callback()
      client.key_value_set(key, "success")
    else:
      client.blocking_key_value_get(key, TIMEOUT_MS)

  def wait_until_finished(self):
    if self._thread is not None:
      self._thread.join()


def _upload_dir(src_dir_handle, *, dst_dir):
  """Upload a directory (non-recursively) from a temporary dir to dst_dir."""
  os.makedirs(dst_dir, exist_ok=True)
  for item in os.listdir(src_dir_handle.name):
    shutil.copy(os.path.join(src_dir_handle.name, item), os.path.join(dst_dir, item))
  src_dir_handle.cleanup()


def async_save_tf_savables(value_map, *, executor, dir):
  f = tempfile.TemporaryDirectory()
  for path, value in value_map.items():
    with open(os.path.join(f.name, path), "w") as fp:
      json.dump(value, fp)
  return executor.submit(_upload_dir, f, dst_dir=dir)


def write_index_file(*, ckpt_dir, index):
  with open(os.path.join(ckpt_dir, "index"), "w") as f:
    f.write(json.dumps(index))


class TensorStoreStateStorage:
  def __init__(self):
    self._executor = futures.ThreadPoolExecutor(max_workers=2)
    self._manager = AsyncManager()

  def save_to_dir(self, *, step, state, ckpt_dir, on_commit_callback=write_index_file):
    index = [("step", step)] + [(k, list(v.shape)) for k, v in state["arrays"].items()]
    if jax.process_index() == 0:
      os.makedirs(os.path.join(ckpt_dir, "gda"), exist_ok=True)
    multihost_utils.sync_global_devices(ckpt_dir)
    # Each worker writes its tf checkpoints under a different path.
    save_tf_future = async_save_tf_savables(
        state["input_iter"], executor=self._executor,
        dir=os.path.join(ckpt_dir, f"tf_{jax.process_index()}"))

    def commit():
      save_tf_future.result()
      # Wait for all processes to finish saving TF checkpoints.
      multihost_utils.sync_global_devices(ckpt_dir + "/tf")
      on_commit_callback(ckpt_dir=ckpt_dir, index=index)

    arrays = list(state["arrays"].values())
    paths = [os.path.join(ckpt_dir, "gda", k) for k in state["arrays"]]
    self._manager.serialize(arrays, paths, on_commit_callback=commit)

  def wait_until_finished(self):
    self._manager.wait_until_finished()


def main():
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  local = np.arange(4, dtype=np.float32) + 4 * jax.process_index()
  w = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local)
  w = jax.jit(lambda x: x * 2.0)(w)
  state = {"arrays": {"w": w}, "input_iter": {"input_iter": {"position": 7 + jax.process_index()}}}
  ckpt_dir = os.path.join(tempfile.gettempdir(), f"b6a_axl_{os.environ.get('JOB_ID', 'local')}", "step_3")
  storage = TensorStoreStateStorage()
  storage.save_to_dir(step=3, state=state, ckpt_dir=ckpt_dir)
  storage.wait_until_finished()
  with open(os.path.join(ckpt_dir, "index")) as f:
    index = json.load(f)
  total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(w)
  multihost_utils.sync_global_devices("restore:" + ckpt_dir)
  print(f"RESULT index={index}")
  print(f"RESULT w_sum={float(total):.1f}")


if __name__ == "__main__":
  main()

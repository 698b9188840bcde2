# Port of a Megatron-Bridge bug to multi-controller JAX: the JSONL memory-map index is built by global
# rank 0; the fallback for node-local (non-shared) caches is guarded by global rank 0 as well, so on
# the second node nobody builds that node's index: its process fails to load it while the first
# node's process goes on into the training collectives.
# Source: https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/5107
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

JOB = os.environ.get("JOB_ID", "job")


def get_rank():
  return jax.process_index()


def get_local_rank():
  # One process per node in this job.
  return int(os.environ.get("LOCAL_RANK", "0"))


def node_local_dir():
  # Each node has its own /tmp: the dataset copy and the index cache are node-local.
  return tempfile.mkdtemp(prefix=f"b7a_memmap_{JOB}_node{jax.process_index()}_")


def barrier(name):
  multihost_utils.sync_global_devices(name)


def build_index_files(dataset_path, index_path):
  if os.path.exists(index_path):
    return  # rebuilding an existing index is a no-op
  offsets = [0]
  with open(dataset_path, "rb") as f:
    for line in f:
      offsets.append(offsets[-1] + len(line))
  np.save(index_path, np.asarray(offsets, np.int64))


class JSONLMemMapDataset:

  def __init__(self, dataset_path, index_mapping_dir):
    self.dataset_path = dataset_path
    self.index_path = os.path.join(index_mapping_dir, os.path.basename(dataset_path) + ".idx.npy")
    if get_rank() == 0:
      build_index_files(dataset_path, self.index_path)
    barrier("jsonl_index_initial_build")
    # Fallback for non-shared filesystems: build this node's index if it is missing.
    if get_rank() == 0:
      build_index_files(dataset_path, self.index_path)
    barrier("jsonl_index_fallback_build")
    if not os.path.exists(self.index_path):
      raise ValueError(f"Missing memory-map index {self.index_path}")
    self.offsets = np.load(self.index_path, mmap_mode="r")

  def __len__(self):
    return len(self.offsets) - 1

  def __getitem__(self, i):
    with open(self.dataset_path, "rb") as f:
      f.seek(int(self.offsets[i]))
      return json.loads(f.readline())


def write_dataset(directory, n=8):
  path = os.path.join(directory, "sft_train.jsonl")
  with open(path, "w") as f:
    for i in range(n):
      f.write(json.dumps({"input": [i, i + 1, i + 2, i + 3], "label": float(i % 3)}) + "\n")
  return path


def train(dataset, steps=3):
  mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
  sharding = NamedSharding(mesh, P("data"))
  step_fn = jax.jit(lambda w, x, y: w - 0.01 * jax.grad(
      lambda p: jnp.mean((x @ p - y) ** 2))(w))
  w = jnp.zeros((4,), jnp.float32)
  for step in range(steps):
    rows = [dataset[(2 * step + jax.process_index()) % len(dataset)]]
    x = np.asarray([r["input"] for r in rows], np.float32)
    y = np.asarray([r["label"] for r in rows], np.float32)
    w = step_fn(w, jax.make_array_from_process_local_data(sharding, x),
                jax.make_array_from_process_local_data(sharding, y))
  return np.asarray(w)


def main():
  local = node_local_dir()
  dataset = JSONLMemMapDataset(write_dataset(local), index_mapping_dir=local)
  w = train(dataset)
  print(f"RESULT num_samples {len(dataset)}")
  print(f"RESULT w {np.round(w, 5).tolist()}")


if __name__ == "__main__":
  main()

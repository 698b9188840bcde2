# Dataset file globs are expanded on host 0 only and "broadcast" with broadcast_one_to_all, but the
# other hosts pass None and the payload is a list of path strings: the hosts disagree on the tree.
# Source: https://github.com/AI-Hypercomputer/maxtext/commit/003d7192678d0d96ae4cdd3e901eaff6c9c9764f
#   (reverted by https://github.com/AI-Hypercomputer/maxtext/commit/615810f071fc1bb5bf3d1e904ab27e7ddfad16d7)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import glob
import math
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class DataConfig:
  data_file_pattern: str
  data_file_type: str = "tfrecord"
  global_batch_size: int = 4
  shuffle_seed: int = 0


def get_expanded_file_paths(data_file_pattern):
  """Expands dataset file globs on host 0 only and broadcasts to all hosts."""
  if jax.process_index() == 0:
    path = Path(data_file_pattern)
    if "*" in path.name or "?" in path.name:
      files = sorted(str(p) for p in path.parent.glob(path.name))
    elif path.is_dir():
      files = sorted(str(p) for p in path.glob("*"))
    else:
      files = [str(path)]
  else:
    files = None
  # Broadcasts across processes (or no-op if process_count == 1)
  return multihost_utils.broadcast_one_to_all(files)


def compute_file_sharding(num_files, host_index, host_count):
  files_per_host = max(1, num_files // host_count)
  start = host_index * files_per_host
  return slice(start, start + files_per_host), files_per_host


def read_rows(files):
  return [np.loadtxt(f, dtype=np.float32).reshape(-1) for f in files]


def get_datasets(config, dataloading_host_index, dataloading_host_count):
  if config.data_file_type in ("tfrecord", "parquet"):
    data_files = get_expanded_file_paths(config.data_file_pattern)
    file_slice, files_per_host = compute_file_sharding(
        len(data_files), dataloading_host_index, dataloading_host_count)
    return read_rows(data_files[file_slice])
  raise ValueError(f"unsupported data_file_type {config.data_file_type}")


def write_shards(root, num_shards=4):
  if jax.process_index() == 0:
    os.makedirs(root, exist_ok=True)
    for i in range(num_shards):
      np.savetxt(os.path.join(root, f"train-{i:05d}.txt"), np.arange(4, dtype=np.float32) + 10 * i)
  multihost_utils.sync_global_devices("shards_written")


def main():
  root = os.path.join(tempfile.gettempdir(), f"b6a_glob_{os.environ.get('JOB_ID', 'local')}")
  write_shards(root)
  config = DataConfig(data_file_pattern=os.path.join(root, "train-*.txt"))
  rows = get_datasets(config, jax.process_index(), jax.process_count())
  local = np.stack(rows)  # [files_per_host, 4]
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  batch = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local)
  total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(batch)
  print(f"RESULT global_batch_shape={batch.shape}")
  print(f"RESULT batch_sum={float(total):.1f}")


if __name__ == "__main__":
  main()

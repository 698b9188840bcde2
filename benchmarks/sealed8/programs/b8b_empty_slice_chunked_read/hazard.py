# Port of a caput report to multi-controller JAX: a distributed array read from a file in chunks,
# where each chunk read is collective; when the distributed axis is shorter than the number of
# processes, a process with an empty local slice runs no chunk reads and the others hang.
# Source: https://github.com/radiocosmology/caput/issues/339
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def split_local(n, size=None, rank=None):
  """Length and start of this process's block when n items are split over the processes."""
  size = jax.process_count() if size is None else size
  rank = jax.process_index() if rank is None else rank
  base, extra = divmod(n, size)
  local = base + (1 if rank < extra else 0)
  start = rank * base + min(rank, extra)
  return local, start


class MPIArray:
  """A numpy array distributed over processes along `axis`."""

  chunk_rows = 2

  def __init__(self, global_shape, local_array, axis=0):
    self.global_shape = tuple(global_shape)
    self.local_array = local_array
    self.axis = axis

  @classmethod
  def from_file(cls, path, shape, axis=0):
    data = np.memmap(path, dtype=np.float32, mode="r", shape=shape)
    local_len, start = split_local(shape[axis])
    rows = []
    n_chunks = -(-local_len // cls.chunk_rows)
    for c in range(n_chunks):
      lo = start + c * cls.chunk_rows
      hi = min(start + local_len, lo + cls.chunk_rows)
      rows.append(cls._collective_read(data, lo, hi))
    local = np.concatenate(rows, axis=0) if rows else np.zeros((0,) + shape[1:], np.float32)
    return cls(shape, local, axis)

  @staticmethod
  def _collective_read(data, lo, hi):
    # Collective I/O: every process announces the size of its request before the data moves.
    multihost_utils.process_allgather(np.int32(hi - lo))
    return np.array(data[lo:hi])

  def sum(self, axis=0):
    local = self.local_array.sum(axis=axis).astype(np.float32)
    return np.asarray(multihost_utils.process_allgather(local)).sum(axis=0)


def write_frequency_map(shape):
  path = os.path.join(tempfile.gettempdir(),
                      f"b8b_caput_{os.environ.get('JOB_ID', 'job')}_{jax.process_index()}.dat")
  arr = np.memmap(path, dtype=np.float32, mode="w+", shape=shape)
  arr[:] = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7.0
  arr.flush()
  return path


def main():
  shape = (1, 6)  # one frequency, fewer than the number of processes
  path = write_frequency_map(shape)
  dist = MPIArray.from_file(path, shape, axis=0)
  total = dist.sum(axis=0)
  print(f"RESULT spectrum_sum {np.round(total, 4).tolist()}")
  print(f"RESULT global_shape {list(dist.global_shape)}")


if __name__ == "__main__":
  main()

# Port of an mpi4jax hot-potato exchange to multi-controller JAX (correct look-alike): the ppermute pairs list every rank's send/recv partner, the same on every process.
# Source: https://github.com/mpi4jax/mpi4jax/pull/111
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.experimental.shard_map import shard_map
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("ranks",))
LOCAL = 4


def neighbour_pairs():
  """Every rank sends to the next rank (source=r, dest=r+1), listed for all ranks."""
  rank, size = jax.process_index(), jax.process_count()
  return [(r, (r + 1) % size) for r in range(size)]


def make_exchange(pairs):
  @jax.jit
  @partial(shard_map, mesh=MESH, in_specs=P("ranks"), out_specs=P("ranks"))
  def hot_potato(block):
    a = block + 1.0
    b = jax.lax.ppermute(a, "ranks", perm=pairs)
    c = jax.lax.ppermute(b * 2.0, "ranks", perm=pairs)
    return a + b + c
  return hot_potato


def to_global(local):
  sharding = NamedSharding(MESH, P("ranks"))
  return jax.make_array_from_process_local_data(sharding, local)


def main():
  exchange = make_exchange(neighbour_pairs())
  rank = jax.process_index()
  x = to_global(np.arange(LOCAL, dtype=np.float32) + 10.0 * rank)
  for _ in range(3):
    x = exchange(x)
    x = x / 10.0
  out = np.asarray(multihost_utils.process_allgather(x, tiled=True))
  print(f"RESULT potato {np.round(out, 4).tolist()}")


if __name__ == "__main__":
  main()

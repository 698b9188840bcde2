# Port to JAX of a Lightning MPIEnvironment bug: hostnames are gathered to rank 0 only (gather returns
# None elsewhere), but every rank then runs sorted(set(all_hostnames)) before the broadcast.
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19062
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
import socket

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

_MAX_LEN = 64


def _encode(names):
  out = np.zeros((len(names), _MAX_LEN), dtype=np.uint8)
  for i, n in enumerate(names):
    b = n.encode()[:_MAX_LEN]
    out[i, : len(b)] = np.frombuffer(b, dtype=np.uint8)
  return out


def _decode(arr):
  return [bytes(row[row > 0]).decode() for row in np.asarray(arr).reshape(-1, _MAX_LEN)]


class Comm:
  """mpi4py-style communicator over multihost_utils."""

  def gather(self, obj, root=0):
    gathered = multihost_utils.process_allgather(_encode([obj]), tiled=True)
    return _decode(gathered) if jax.process_index() == root else None

  def bcast(self, names, root=0):
    count = multihost_utils.broadcast_one_to_all(np.int32(len(names) if names is not None else 0))
    payload = _encode(names) if jax.process_index() == root else np.zeros((int(count), _MAX_LEN), np.uint8)
    return _decode(multihost_utils.broadcast_one_to_all(payload))


class MPIEnvironment:
  def __init__(self):
    self._comm_world = Comm()
    self._node_rank = None
    self._unique_hosts = None

  def _init_comm_local(self):
    hostname = socket.gethostname()
    all_hostnames = self._comm_world.gather(hostname, root=0)
    # sort all the hostnames, and find unique ones
    unique_hosts = sorted(set(all_hostnames))
    unique_hosts = self._comm_world.bcast(unique_hosts, root=0)
    # find the index for this host in the list of hosts:
    self._node_rank = unique_hosts.index(hostname)
    self._unique_hosts = unique_hosts

  def node_rank(self):
    if self._node_rank is None:
      self._init_comm_local()
    return self._node_rank


def main():
  env = MPIEnvironment()
  node_rank = env.node_rank()
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")),
                                             np.array([node_rank + jax.process_index()], np.float32))
  total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(x)
  print(f"RESULT num_nodes={len(env._unique_hosts)}")
  print(f"RESULT rank_sum={float(total):.1f}")


if __name__ == "__main__":
  main()

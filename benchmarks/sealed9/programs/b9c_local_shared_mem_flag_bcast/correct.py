# Port of an MRChem MPI fix to multi-controller JAX (correct look-alike): the shared-memory decision is a property of the node (number of non-bank ranks on it), the same on every rank.
# Source: https://github.com/MRChemSoft/mrchem/pull/351
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NODE_OF_RANK = {0: "node0", 1: "node0"}
BANK_RANKS = {0}          # the orbital bank occupies all but one rank on node0
SCRATCH = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_shared_orbital", os.environ.get("JOB_ID", "job"))


class Orbital:

  def __init__(self, coefs):
    self.coefs = np.asarray(coefs, np.float32)
    self.shared = False


def is_shared(rank):
  """Is this orbital placed in the node's shared memory window?"""
  node = NODE_OF_RANK[rank]
  workers = [r for r, n in NODE_OF_RANK.items() if n == node and r not in BANK_RANKS]
  return len(workers) > 1


def broadcast_function(orb, root=0):
  if orb.shared:
    # shared memory: root writes, the node's ranks read after a barrier
    path = os.path.join(SCRATCH, "orbital.npy")
    if jax.process_index() == root:
      os.makedirs(SCRATCH, exist_ok=True)
      np.save(path, orb.coefs)
    multihost_utils.sync_global_devices("shared_orbital_written")
    orb.coefs = np.load(path)
  else:
    orb.coefs = np.asarray(multihost_utils.broadcast_one_to_all(orb.coefs))
  return orb


@jax.jit
def apply_potential(c, v):
  return c * v / jnp.linalg.norm(c * v)


def scf(iterations=3):
  rank = jax.process_index()
  rng = np.random.default_rng(17 + rank)
  orb = Orbital(rng.normal(size=8) if rank == 0 else np.zeros(8))
  orb.shared = is_shared(rank)
  v = jnp.linspace(0.5, 1.5, 8)
  energies = []
  for _ in range(iterations):
    orb = broadcast_function(orb)
    orb.coefs = np.asarray(apply_potential(jnp.asarray(orb.coefs), v))
    e = np.asarray(multihost_utils.process_allgather(np.float32(orb.coefs @ orb.coefs * (rank + 1))))
    energies.append(float(e.sum()))
  return orb, energies


def main():
  orb, energies = scf()
  print(f"RESULT energies {np.round(energies, 5).tolist()}")
  print(f"RESULT orbital {np.round(orb.coefs, 5).tolist()}")


if __name__ == "__main__":
  main()

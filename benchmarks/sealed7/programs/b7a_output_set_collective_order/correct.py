# Port of an nvalchemi-toolkit fix to multi-controller JAX: the model's output names come from a set,
# whose iteration order follows each interpreter's string-hash seed, so output consolidation now
# issues its one collective per key in sorted key order, the same on every process.
# Source: https://github.com/NVIDIA/nvalchemi-toolkit/pull/143
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PER_GRAPH = {"energy": (), "stress": (3, 3), "virial": (3, 3), "dipole": (3,)}
PER_ATOM = {"forces": (3,), "charges": ()}
N_OWNED, N_GHOST = 4, 2


class BaseModelMixin:
  supported_outputs = frozenset(PER_GRAPH) | frozenset(PER_ATOM)

  def __init__(self, active_outputs):
    self.active_outputs = set(active_outputs)

  def output_data(self):
    return self.active_outputs & self.supported_outputs


class PairModel(BaseModelMixin):

  def __init__(self, active_outputs):
    super().__init__(active_outputs)
    self._local = jax.jit(self._compute_local)

  @staticmethod
  def _compute_local(pos):
    d = pos[:, None, :] - pos[None, :, :]
    r2 = jnp.sum(d ** 2, -1) + jnp.eye(pos.shape[0])
    e = 0.5 * jnp.sum(jnp.triu(1.0 / r2, 1))
    f = jnp.sum(d / r2[..., None] ** 2, axis=1)
    return e, f

  def forward(self, pos):
    outputs = {key: None for key in self.output_data()}
    e, f = self._local(jnp.asarray(pos))
    e, f = float(e), np.asarray(f)
    stress = np.outer(f.sum(0), pos.mean(0))
    local = {"energy": np.float32(e), "stress": stress.astype(np.float32),
             "virial": (-stress).astype(np.float32), "dipole": pos.sum(0).astype(np.float32),
             "forces": f.astype(np.float32), "charges": np.linalg.norm(f, axis=1).astype(np.float32)}
    for key in outputs:
      outputs[key] = local[key]
    return outputs


class DomainParallel:

  def __init__(self, model):
    self.model = model

  def _all_reduce(self, value):
    return np.asarray(multihost_utils.process_allgather(value)).sum(axis=0)

  def _reverse_halo_exchange(self, per_atom):
    # Ghost-atom contributions go back to the process that owns the atom.
    ghosts = per_atom[N_OWNED:]
    received = np.asarray(multihost_utils.process_allgather(ghosts))
    peer = (jax.process_index() + 1) % jax.process_count()
    owned = per_atom[:N_OWNED].copy()
    owned[:N_GHOST] += received[peer]
    return owned

  def consolidate(self, outputs):
    result = {}
    for key in sorted(outputs):
      value = outputs[key]
      if key in PER_GRAPH:
        result[key] = self._all_reduce(value)
      else:
        result[key] = self._reverse_halo_exchange(value)
    return result

  def __call__(self, pos):
    return self.consolidate(self.model.forward(pos))


def local_domain():
  rng = np.random.default_rng(jax.process_index())
  return rng.normal(size=(N_OWNED + N_GHOST, 3)).astype(np.float32)


def main():
  model = PairModel(active_outputs=["energy", "forces", "stress", "virial", "dipole", "charges"])
  result = DomainParallel(model)(local_domain())
  print(f"RESULT energy {float(result['energy']):.5f}")
  print(f"RESULT stress {np.round(result['stress'], 4).ravel().tolist()}")
  print(f"RESULT dipole {np.round(result['dipole'], 4).tolist()}")
  force_sum = np.asarray(multihost_utils.process_allgather(result["forces"])).sum()
  print(f"RESULT force_sum {float(force_sum):.4f}")


if __name__ == "__main__":
  main()

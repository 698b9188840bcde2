# Port of a OneFlow report to multi-controller JAX (correct look-alike): the global mean is computed on every process; only the print is kept on rank 0.
# Source: https://github.com/Oneflow-Inc/oneflow/pull/7344
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Config:
  rows_per_rank: int = 8
  features: int = 4
  steps: int = 5
  lr: float = 0.1


MESH = Mesh(np.array(jax.devices()), ("data",))
SPLIT0 = NamedSharding(MESH, P("data"))
REPLICATED = NamedSharding(MESH, P())


def to_global(local):
  """Like tensor.to_global(placement, sbp=split(0)): every rank contributes its rows."""
  return multihost_utils.host_local_array_to_global_array(local, MESH, P("data"))


@jax.jit
def global_mean(x):
  return jnp.mean(x)


@jax.jit
def train_step(w, x):
  def loss_fn(w):
    return jnp.mean((x @ w - 1.0) ** 2)
  loss, g = jax.value_and_grad(loss_fn)(w)
  return w - 0.1 * g, loss


def main():
  cfg = Config()
  rank = jax.process_index()
  rng = np.random.default_rng(7 + rank)
  data = rng.normal(size=(cfg.rows_per_rank, cfg.features)).astype(np.float32)
  consistent_data = to_global(data)
  w = jax.device_put(jnp.zeros((cfg.features,), jnp.float32), REPLICATED)
  losses = []
  for step in range(cfg.steps):
    w, loss = train_step(w, consistent_data)
    losses.append(float(loss))
    gmean = float(global_mean(consistent_data))
    if rank == 0:
      print(f"step {step} local mean {data.mean():.4f}")
      print(f"step {step} global mean {gmean:.4f}")
  final = float(jax.jit(lambda x, w: jnp.mean(x @ w))(consistent_data, w))
  print(f"RESULT losses {' '.join(f'{l:.5f}' for l in losses)}")
  print(f"RESULT final_pred_mean {final:.5f}")


if __name__ == "__main__":
  main()

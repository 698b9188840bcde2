# Port of a Ray Train report to multi-controller JAX: one worker's training function raises on a bad record while the other worker waits in the gradient all-reduce of the same step.
# Source: https://github.com/ray-project/ray/pull/28314
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {"lr": 0.05, "batch_size": 8, "num_steps": 6, "features": 5}


class BadRecordError(ValueError):
  pass


def get_dataset_shard(world_rank, config):
  """Each worker's shard of the ingested dataset; shard 1 has a corrupt record in step 3."""
  rng = np.random.default_rng(1234 + world_rank)
  x = rng.normal(size=(config["num_steps"], config["batch_size"], config["features"])).astype(np.float32)
  if world_rank == 1:
    x[3, 2, 1] = np.nan
  y = x.sum(axis=-1) * 0.5
  return x, y


def validate(xb):
  if not np.all(np.isfinite(xb)):
    raise BadRecordError("non-finite feature in batch")


@jax.jit
def grad_fn(w, xb, yb):
  return jax.value_and_grad(lambda w: jnp.mean((xb @ w - yb) ** 2))(w)


def allreduce_mean(g):
  return np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0)


def train_func(config):
  rank = jax.process_index()
  x, y = get_dataset_shard(rank, config)
  w = np.zeros(config["features"], np.float32)
  skipped = 0
  history = []
  for step in range(config["num_steps"]):
    xb, yb = x[step], y[step]
    validate(xb)
    loss, g = grad_fn(w, xb, yb)
    g = allreduce_mean(g)
    w = w - config["lr"] * g
    history.append(float(allreduce_mean(np.float32(loss))))
  return w, history, skipped


def main():
  w, history, skipped = train_func(CONFIG)
  print(f"RESULT skipped {skipped}")
  print(f"RESULT loss {np.round(history, 5).tolist()}")
  print(f"RESULT w {np.round(w, 5).tolist()}")


if __name__ == "__main__":
  main()

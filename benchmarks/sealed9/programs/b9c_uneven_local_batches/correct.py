# Port of a Horovod report to multi-controller JAX (correct look-alike): the number of batches per epoch is agreed (minimum over processes) before training.
# Source: https://github.com/horovod/horovod/issues/3980
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Config:
  num_records: int = 41      # records in the part-* files, split by worker_index
  batch_size: int = 4
  lr: float = 0.1
  epochs: int = 2


def read_shard(cfg, worker_index, num_workers):
  """Like a file-sharded reader: worker i gets records i, i+n, i+2n, ..."""
  rng = np.random.default_rng(7)
  x = rng.normal(size=(cfg.num_records, 3)).astype(np.float32)
  y = (x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3).astype(np.float32)
  return x[worker_index::num_workers], y[worker_index::num_workers]


def batches(x, y, batch_size):
  for start in range(0, len(x), batch_size):
    yield x[start:start + batch_size], y[start:start + batch_size]


@jax.jit
def local_grad(params, xb, yb):
  def loss(p):
    return jnp.mean((xb @ p["w"] + p["b"] - yb) ** 2)
  return jax.value_and_grad(loss)(params)


def allreduce_mean(tree):
  gathered = multihost_utils.process_allgather(tree)
  return jax.tree_util.tree_map(lambda g: np.asarray(g).mean(axis=0), gathered)


def train(cfg):
  x, y = read_shard(cfg, jax.process_index(), jax.process_count())
  params = {"w": np.zeros(3, np.float32), "b": np.float32(0.0)}
  params = multihost_utils.broadcast_one_to_all(params)
  local_batches = -(-len(x) // cfg.batch_size)
  steps_per_epoch = int(np.min(multihost_utils.process_allgather(np.int32(local_batches))))
  steps = 0
  for epoch in range(cfg.epochs):
    for _, (xb, yb) in zip(range(steps_per_epoch), batches(x, y, cfg.batch_size)):
      loss, grads = local_grad(params, xb, yb)
      grads = allreduce_mean(grads)
      params = jax.tree_util.tree_map(lambda p, g: p - cfg.lr * g, params, grads)
      steps += 1
  return params, steps


def main():
  cfg = Config()
  params, steps = train(cfg)
  final = allreduce_mean({"w": np.asarray(params["w"]), "b": np.asarray(params["b"])})
  print(f"RESULT steps {steps}")
  print(f"RESULT w {np.round(final['w'], 4).tolist()} b {float(final['b']):.4f}")


if __name__ == "__main__":
  main()

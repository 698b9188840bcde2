# Port of a sentence-transformers fix to multi-controller JAX: the evaluator runs on every process and samples its own subset of pairs, so each process tracks a different best checkpoint.
# Source: https://github.com/huggingface/sentence-transformers/pull/3994
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DIM = 6


def make_pairs(n, seed):
  rng = np.random.default_rng(seed)
  a = rng.normal(size=(n, DIM)).astype(np.float32)
  b = a + rng.normal(scale=0.8, size=(n, DIM)).astype(np.float32)
  labels = (rng.random(n) < 0.5).astype(np.float32)
  b = np.where(labels[:, None] > 0, b, rng.normal(size=(n, DIM)).astype(np.float32))
  return a, b, labels


class SimilarityEvaluator:
  """Accuracy of cosine-similarity > threshold on a sample of the dev pairs."""

  def __init__(self, pairs, sample_size=24):
    self.pairs, self.sample_size = pairs, sample_size

  def __call__(self, w):
    a, b, y = self.pairs
    pick = np.random.default_rng().choice(len(y), self.sample_size, replace=False)
    ea, eb = a[pick] @ w, b[pick] @ w
    cos = (ea * eb).sum(1) / (np.linalg.norm(ea, axis=1) * np.linalg.norm(eb, axis=1) + 1e-6)
    return {"eval_accuracy": float(np.mean((cos > 0.5) == (y[pick] > 0)))}


@jax.jit
def contrastive_grad(w, a, b, y):
  def loss(w):
    ea, eb = a @ w, b @ w
    cos = (ea * eb).sum(1) / (jnp.linalg.norm(ea, axis=1) * jnp.linalg.norm(eb, axis=1) + 1e-6)
    return jnp.mean((cos - y) ** 2)
  return jax.grad(loss)(w)


class Trainer:

  def __init__(self, evaluator):
    self.w = np.eye(DIM, dtype=np.float32)
    self.evaluator = evaluator
    self.best = (-1.0, None)
    self.log_history = []

  def evaluate(self):
    metrics = self.evaluator(self.w)
    return metrics

  def train(self, steps=6):
    a, b, y = make_pairs(32, seed=50 + jax.process_index())
    for step in range(1, steps + 1):
      g = np.asarray(contrastive_grad(self.w, a, b, y))
      g = np.asarray(multihost_utils.process_allgather(g)).mean(axis=0)
      self.w = self.w - 0.5 * g
      metrics = self.evaluate()
      self.log_history.append(round(metrics["eval_accuracy"], 4))
      if metrics["eval_accuracy"] > self.best[0]:
        self.best = (metrics["eval_accuracy"], step)
    return self.best


def main():
  trainer = Trainer(SimilarityEvaluator(make_pairs(200, seed=7)))
  acc, step = trainer.train()
  print(f"RESULT best_step {step}")
  print(f"RESULT best_accuracy {acc:.4f}")
  print(f"RESULT eval_history {trainer.log_history}")


if __name__ == "__main__":
  main()

# Port of a Paddle fleet report to multi-controller JAX (correct look-alike): lengths are gathered first and every card pads its predictions to the longest before the gather, then trims.
# Source: https://github.com/PaddlePaddle/Paddle/issues/50308
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def detect(images, thresh=0.55):
  """Toy detector: one box score per cell above threshold, so the number of outputs varies per image."""
  scores = jax.nn.sigmoid(jnp.asarray(images))
  return np.asarray(scores)[np.asarray(scores) > thresh]


class RecallMetric:
  def __init__(self):
    self.all_scores = []

  def update(self, local_scores):
    lengths = np.asarray(multihost_utils.process_allgather(np.int32(len(local_scores)))).reshape(-1)
    padded = np.full((int(lengths.max()),), -1.0, np.float32)
    padded[:len(local_scores)] = local_scores
    gathered = np.asarray(multihost_utils.process_allgather(padded))
    self.all_scores.append(np.concatenate([g[:n] for g, n in zip(gathered, lengths)]))

  def accumulate(self):
    scores = np.concatenate(self.all_scores)
    return float((scores > 0.7).mean()), int(scores.size)


def eval_images(rank, step):
  rng = np.random.default_rng(100 * step + rank)
  return rng.normal(loc=0.3 * rank, size=(12,)).astype(np.float32)


def main():
  metric = RecallMetric()
  for step in range(3):
    preds = detect(eval_images(jax.process_index(), step))
    metric.update(preds)
  recall, n = metric.accumulate()
  print(f"RESULT num_boxes {n}")
  print(f"RESULT recall {recall:.5f}")


if __name__ == "__main__":
  main()

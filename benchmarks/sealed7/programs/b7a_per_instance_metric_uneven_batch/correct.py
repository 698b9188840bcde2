# Port of an AllenNLP TransformerQA fix to multi-controller JAX: the SQuAD EM/F1 metric reduces its
# counts across processes on every call, so forward() first agrees on the smallest batch size over
# all processes and calls the metric only for that many instances on every process.
# Source: https://github.com/allenai/allennlp-models/pull/193
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "in", "park", "red", "ball"]


def is_distributed():
  return jax.process_count() > 1


class SquadEmAndF1:
  """Accumulates exact match and F1; in the distributed case each call sums over all processes."""

  def __init__(self):
    self._total_em = 0.0
    self._total_f1 = 0.0
    self._count = 0

  def __call__(self, best_span_string, answer_strings):
    em = float(any(best_span_string == a for a in answer_strings))
    pred = set(best_span_string.split())
    f1 = max(2 * len(pred & set(a.split())) / max(len(pred) + len(a.split()), 1)
             for a in answer_strings)
    count = 1
    if is_distributed():
      summed = multihost_utils.process_allgather(np.array([em, f1, count], np.float32)).sum(0)
      em, f1, count = float(summed[0]), float(summed[1]), int(summed[2])
    self._total_em += em
    self._total_f1 += f1
    self._count += count

  def get_metric(self):
    return self._total_em / max(self._count, 1), self._total_f1 / max(self._count, 1)


class TransformerQA:

  def __init__(self, seed=0):
    rng = np.random.default_rng(seed)
    self.start_w = jnp.asarray(rng.normal(size=(len(VOCAB),)), jnp.float32)
    self.end_w = jnp.asarray(rng.normal(size=(len(VOCAB),)), jnp.float32)
    self._span_scores = jax.jit(self._scores)
    self._per_instance_metrics = SquadEmAndF1()

  def _scores(self, token_ids):
    return self.start_w[token_ids], self.end_w[token_ids]

  def forward(self, token_ids, metadata):
    start, end = self._span_scores(jnp.asarray(token_ids))
    start, end = np.asarray(start), np.asarray(end)
    min_node_batch_size = len(metadata)
    if is_distributed():
      # If the batch isn't balanced across processes the per-instance reductions would not pair up.
      min_node_batch_size = int(multihost_utils.process_allgather(
          np.array(min_node_batch_size, np.int32)).min())
    for i, meta in enumerate(metadata[:min_node_batch_size]):
      s = int(np.argmax(start[i]))
      e = s + int(np.argmax(end[i, s:]))
      best_span_string = " ".join(meta["context_tokens"][s:e + 1])
      self._per_instance_metrics(best_span_string, meta["answers"])

  def get_metrics(self):
    return self._per_instance_metrics.get_metric()


def read_instances(num_questions=13, length=6):
  rng = np.random.default_rng(7)
  instances = []
  for q in range(num_questions):
    ids = rng.integers(0, len(VOCAB), size=length)
    tokens = [VOCAB[i] for i in ids]
    instances.append({"qid": q, "ids": ids, "context_tokens": tokens,
                      "answers": [" ".join(tokens[1:3])]})
  # Sharded reader: each process reads every process_count-th instance.
  return instances[jax.process_index()::jax.process_count()]


def batches(instances, batch_size):
  for start in range(0, len(instances), batch_size):
    chunk = instances[start:start + batch_size]
    yield np.stack([inst["ids"] for inst in chunk]), chunk


def evaluate(model, instances, batch_size=4):
  for token_ids, metadata in batches(instances, batch_size):
    model.forward(token_ids, metadata)
  return model.get_metrics()


def main():
  model = TransformerQA()
  em, f1 = evaluate(model, read_instances())
  print(f"RESULT em {em:.6f}")
  print(f"RESULT f1 {f1:.6f}")
  print(f"RESULT count {model._per_instance_metrics._count}")


if __name__ == "__main__":
  main()

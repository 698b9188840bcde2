# Port of a PaddleNLP Transformer reader bug to multi-controller JAX: sentences and token-budget batches are shuffled with the global RNG (seeded per worker), so each process builds a different number of batches.
# Source: https://github.com/PaddlePaddle/models/pull/5121
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MAX_TOKENS = 64
POOL_SIZE = 16
SEED = 128


def make_corpus(n=120):
  rng = np.random.RandomState(0)
  return [rng.randint(1, 50, size=rng.randint(3, 30)).astype(np.int32) for _ in range(n)]


class TokenBatchSampler:
  """Sort sentences inside pools, then cut batches by a max-token budget (padded length x rows)."""

  def __init__(self, corpus, max_tokens, pool_size, seed):
    self.corpus, self.max_tokens, self.pool_size = corpus, max_tokens, pool_size
    self.rng = np.random.RandomState(seed)

  def batches(self, shuffle_batch):
    order = np.random.permutation(len(self.corpus))
    batches = []
    for start in range(0, len(order), self.pool_size):
      pool = sorted(order[start:start + self.pool_size], key=lambda i: len(self.corpus[i]))
      cur, cur_max = [], 0
      for i in pool:
        new_max = max(cur_max, len(self.corpus[i]))
        if cur and new_max * (len(cur) + 1) > self.max_tokens:
          batches.append(cur)
          cur, cur_max = [], 0
          new_max = len(self.corpus[i])
        cur.append(i)
        cur_max = new_max
      if cur:
        batches.append(cur)
    if shuffle_batch:
      np.random.shuffle(batches)
    return batches

  def shard(self, batches, rank, nranks):
    usable = len(batches) // nranks * nranks  # drop the remainder so every rank gets equal work
    return batches[rank:usable:nranks]


@jax.jit
def token_loss(tokens, w):
  emb = w[tokens % w.shape[0]]
  return jnp.sum((emb - 0.5) ** 2), jnp.sum(tokens > 0)


def main():
  rank, nranks = jax.process_index(), jax.process_count()
  np.random.seed(1000 + rank)  # per-worker dropout / augmentation noise
  corpus = make_corpus()
  sampler = TokenBatchSampler(corpus, MAX_TOKENS, POOL_SIZE, SEED)
  w = jnp.linspace(0.0, 1.0, 64, dtype=jnp.float32)
  total_loss, total_tok, steps = 0.0, 0, 0
  for epoch in range(2):
    my_batches = sampler.shard(sampler.batches(shuffle_batch=True), rank, nranks)
    for batch in my_batches:
      width = max(len(corpus[i]) for i in batch)
      tokens = np.zeros((len(batch), width), np.int32)
      for r, i in enumerate(batch):
        tokens[r, :len(corpus[i])] = corpus[i]
      loss, ntok = token_loss(jnp.asarray(tokens), w)
      synced = np.asarray(multihost_utils.process_allgather(np.array([float(loss), float(ntok)], np.float32)))
      total_loss += float(synced[:, 0].sum())
      total_tok += int(synced[:, 1].sum())
      steps += 1
  multihost_utils.sync_global_devices("end_of_training")
  print(f"RESULT steps {steps}")
  print(f"RESULT avg_token_loss {total_loss / max(total_tok, 1):.6f}")


if __name__ == "__main__":
  main()

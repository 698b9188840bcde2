# Port of an axolotl fix to multi-controller JAX: the multipack sampler packs each process's share of
# samples into fixed-size rows; a process that runs out of packed batches before the agreed loader
# length yields placeholder batches with no labelled tokens, so every process runs every step.
# Source: https://github.com/axolotl-ai-cloud/axolotl/pull/461
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SEQ_LEN = 64


class MultipackBatchSampler:
  """First-fit packs this process's samples into rows of SEQ_LEN tokens, rows_per_batch rows a batch."""

  def __init__(self, lengths, rows_per_batch, seed=42):
    self.lengths = lengths
    self.rows_per_batch = rows_per_batch
    self.seed = seed

  def _pack(self):
    order = np.random.default_rng(self.seed).permutation(len(self.lengths))
    mine = order[jax.process_index()::jax.process_count()]
    bins, space = [], []
    for idx in mine:
      n = int(self.lengths[idx])
      for b in range(len(bins)):
        if space[b] >= n:
          bins[b].append(idx)
          space[b] -= n
          break
      else:
        bins.append([idx])
        space.append(SEQ_LEN - n)
    return bins

  def __iter__(self):
    bins = self._pack()
    for start in range(0, len(bins) - self.rows_per_batch + 1, self.rows_per_batch):
      yield bins[start:start + self.rows_per_batch]

  def __len__(self):
    # Estimated from the global token count, the same on every process.
    total_rows = math.ceil(int(np.sum(self.lengths)) / (SEQ_LEN * 0.8))
    return math.ceil(total_rows / (self.rows_per_batch * jax.process_count()))


class PackedDataLoader:

  def __init__(self, tokens, sampler):
    self.tokens = tokens
    self.sampler = sampler

  def _collate(self, batch_bins):
    ids = np.zeros((len(batch_bins), SEQ_LEN), np.int32)
    mask = np.zeros((len(batch_bins), SEQ_LEN), np.float32)
    for r, row in enumerate(batch_bins):
      pos = 0
      for idx in row:
        seq = self.tokens[idx]
        ids[r, pos:pos + len(seq)] = seq
        mask[r, pos:pos + len(seq)] = 1.0
        pos += len(seq)
    return ids, mask

  def __iter__(self):
    yielded = 0
    for batch_bins in self.sampler:
      yield self._collate(batch_bins)
      yielded += 1
    while yielded < len(self.sampler):
      # Workaround: a single unlabelled token per row, so this process still joins the step.
      ids = np.zeros((self.sampler.rows_per_batch, SEQ_LEN), np.int32)
      ids[:, 0] = 1
      yield ids, np.zeros((self.sampler.rows_per_batch, SEQ_LEN), np.float32)
      yielded += 1


class Trainer:

  def __init__(self, loader, vocab=32, lr=0.05):
    self.loader = loader
    self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    self.emb = jnp.full((vocab,), 0.1, jnp.float32)
    self.lr = lr
    self._step = jax.jit(self._train_step)

  def _train_step(self, emb, ids, mask):
    def loss_fn(e):
      logits = e[ids]
      return jnp.sum(mask * (logits - 1.0) ** 2) / jnp.maximum(jnp.sum(mask), 1.0)
    loss, g = jax.value_and_grad(loss_fn)(emb)
    return emb - self.lr * g, loss

  def train(self):
    sharding = NamedSharding(self.mesh, P("data"))
    losses = []
    for ids, mask in self.loader:
      gids = jax.make_array_from_process_local_data(sharding, ids)
      gmask = jax.make_array_from_process_local_data(sharding, mask)
      self.emb, loss = self._step(self.emb, gids, gmask)
      losses.append(float(loss))
    return losses


def make_dataset(n=48, vocab=32):
  rng = np.random.default_rng(0)
  lengths = rng.integers(6, 40, size=n)
  tokens = [rng.integers(1, vocab, size=int(L)).astype(np.int32) for L in lengths]
  return lengths, tokens


def main():
  lengths, tokens = make_dataset()
  loader = PackedDataLoader(tokens, MultipackBatchSampler(lengths, rows_per_batch=2))
  losses = Trainer(loader).train()
  print(f"RESULT steps {len(losses)}")
  print(f"RESULT losses {[round(l, 5) for l in losses]}")


if __name__ == "__main__":
  main()

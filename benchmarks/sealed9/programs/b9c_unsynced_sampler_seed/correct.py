# Port of an MMDetection fix to multi-controller JAX (correct look-alike): the sampler seed drawn when the config gives none is rank 0's, broadcast to every process.
# Source: https://github.com/open-mmlab/mmdetection/pull/7432
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"seed": None, "dataset_len": 40, "samples_per_gpu": 4, "epochs": 2}


def sync_random_seed(seed=None):
  """Pick the sampler seed when the config gives none."""
  if seed is not None:
    return int(seed)
  seed = int(np.random.SeedSequence().entropy % (2 ** 31))
  return int(multihost_utils.broadcast_one_to_all(np.int32(seed)))


class DistributedSampler:

  def __init__(self, dataset_len, num_replicas, rank, seed=None):
    self.dataset_len, self.num_replicas, self.rank = dataset_len, num_replicas, rank
    self.seed = sync_random_seed(seed)
    self.epoch = 0

  def set_epoch(self, epoch):
    self.epoch = epoch

  def global_order(self):
    return np.random.default_rng(self.seed + self.epoch).permutation(self.dataset_len)

  def __iter__(self):
    return iter(self.global_order()[self.rank::self.num_replicas].tolist())


def dataset_item(i):
  return np.float32(np.sin(i) * 3.0 + i * 0.05)


@jax.jit
def update(w, xb):
  g = jax.grad(lambda w: jnp.mean((w - xb) ** 2))(w)
  return g


def main():
  sampler = DistributedSampler(CFG["dataset_len"], jax.process_count(), jax.process_index(), CFG["seed"])
  w = np.float32(0.0)
  seen = []
  for epoch in range(CFG["epochs"]):
    sampler.set_epoch(epoch)
    idx = list(sampler)
    for s in range(0, len(idx), CFG["samples_per_gpu"]):
      batch = np.asarray([dataset_item(i) for i in idx[s:s + CFG["samples_per_gpu"]]])
      g = np.asarray(multihost_utils.process_allgather(np.asarray(update(w, jnp.asarray(batch))))).mean()
      w = np.float32(w - 0.3 * g)
    seen.append(np.asarray(multihost_utils.process_allgather(np.asarray(idx, np.int32))).ravel())
  unique = [len(set(s.tolist())) for s in seen]
  print(f"RESULT global_order_head {sampler.global_order()[:6].tolist()}")
  print(f"RESULT unique_samples_per_epoch {unique}")
  print(f"RESULT w {float(w):.5f}")


if __name__ == "__main__":
  main()

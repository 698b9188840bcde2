# Port of an Accelerate report to multi-controller JAX (correct look-alike): main_process_first makes the other processes wait before the block, so they load the main process's vocabulary cache.
# Source: https://github.com/huggingface/accelerate/issues/1303
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import contextlib
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CACHE_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_main_first", os.environ.get("JOB_ID", "job"))
CORPUS = [f"the {a} {b} sat on the {c}" for a in ("red", "big", "old", "shy") for b in ("cat", "dog", "owl")
          for c in ("mat", "rug", "log", "box", "bed")] * 40


def wait_for_everyone(tag):
  multihost_utils.sync_global_devices(tag)


@contextlib.contextmanager
def main_process_first():
  is_main = jax.process_index() == 0
  if not is_main:
    wait_for_everyone("main_first_done")
  yield
  if is_main:
    wait_for_everyone("main_first_done")


def build_vocab(texts, min_freq=5):
  tokens = set()
  for t in texts:
    for w in t.split():
      tokens.add(w)
  words = list(tokens)
  index = {w: i for i, w in enumerate(words)}
  flat = np.asarray([index[w] for t in texts for w in t.split()], np.int32)
  counts = np.asarray(jax.jit(lambda f: jnp.bincount(f, length=len(words)))(jnp.asarray(flat)))
  kept = [w for w, c in zip(words, counts) if c >= min_freq]
  return {w: i + 1 for i, w in enumerate(kept)}


def load_or_build_vocab():
  path = os.path.join(CACHE_DIR, "vocab.json")
  if os.path.exists(path):
    with open(path) as f:
      return json.load(f)
  vocab = build_vocab(CORPUS)
  os.makedirs(CACHE_DIR, exist_ok=True)
  with open(path + f".tmp{jax.process_index()}", "w") as f:
    json.dump(vocab, f)
  os.replace(path + f".tmp{jax.process_index()}", path)
  return vocab


@jax.jit
def embed_mean(ids, table):
  return table[ids].mean(axis=0)


def main():
  wait_for_everyone("raw_dataset_downloaded")
  with main_process_first():
    vocab = load_or_build_vocab()
  table = jnp.asarray(np.random.default_rng(0).normal(size=(len(vocab) + 1, 4)).astype(np.float32))
  shard = CORPUS[jax.process_index()::jax.process_count()][:8]
  ids = jnp.asarray([[vocab[w] for w in s.split()] for s in shard])
  local = np.asarray(embed_mean(ids.ravel(), table))
  pooled = np.asarray(multihost_utils.process_allgather(local)).mean(axis=0)
  probe = [vocab[w] for w in "the old owl sat on the rug".split()]
  print(f"RESULT probe_ids {probe}")
  print(f"RESULT pooled {np.round(pooled, 5).tolist()}")


if __name__ == "__main__":
  main()

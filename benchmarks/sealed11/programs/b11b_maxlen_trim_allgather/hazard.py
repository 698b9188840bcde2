# A MoCo-style text encoder trims each token batch to its longest sequence, then gathers the batches of all processes for the negative queue
# Source: https://github.com/pytorch/pytorch/issues/56112
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = dict(seq_len=16, vocab=64, dim=8, batch=4, queue=24, steps=3, temperature=0.2)


def tokenize_batch(step):
    """Right-padded token ids and their valid lengths; each process reads its own shard of sentences."""
    rng = np.random.default_rng(1000 * jax.process_index() + step)
    lengths = 4 + 3 * jax.process_index() + (step + np.arange(CFG["batch"])) % 4
    ids = rng.integers(1, CFG["vocab"], size=(CFG["batch"], CFG["seq_len"])).astype(np.int32)
    mask = (np.arange(CFG["seq_len"])[None, :] < lengths[:, None]).astype(np.int32)
    return ids * mask, mask, lengths


@jax.jit
def encode(emb, ids, mask):
    vecs = emb[ids] * mask[..., None]
    pooled = vecs.sum(axis=1) / jnp.maximum(mask.sum(axis=1, keepdims=True), 1)
    return pooled / jnp.linalg.norm(pooled, axis=-1, keepdims=True)


@jax.jit
def info_nce(q, k, queue):
    pos = jnp.sum(q * k, axis=-1, keepdims=True)
    neg = q @ queue.T
    logits = jnp.concatenate([pos, neg], axis=1) / CFG["temperature"]
    return -jnp.mean(jax.nn.log_softmax(logits, axis=1)[:, 0])


class NegativeQueue:
    def __init__(self, dim, size):
        self.keys = np.zeros((size, dim), np.float32)
        self.ptr = 0

    def enqueue(self, keys):
        n = keys.shape[0]
        idx = (self.ptr + np.arange(n)) % self.keys.shape[0]
        self.keys[idx] = keys
        self.ptr = int((self.ptr + n) % self.keys.shape[0])


def concat_all_gather(ids, mask):
    """Gather the (trimmed) token batches of every process, as the key encoder sees all of them."""
    all_ids = multihost_utils.process_allgather(ids, tiled=True)
    all_mask = multihost_utils.process_allgather(mask, tiled=True)
    return np.asarray(all_ids), np.asarray(all_mask)


def main():
    emb = jnp.asarray(np.random.default_rng(0).normal(size=(CFG["vocab"], CFG["dim"])).astype(np.float32))
    queue = NegativeQueue(CFG["dim"], CFG["queue"])
    losses = []
    for step in range(CFG["steps"]):
        ids, mask, lengths = tokenize_batch(step)
        max_len = int(lengths.max())
        ids, mask = ids[:, :max_len], mask[:, :max_len]  # drop the padding columns this batch does not need
        q = encode(emb, ids, mask)
        all_ids, all_mask = concat_all_gather(ids, mask)
        k_all = np.asarray(encode(emb, all_ids, all_mask))
        losses.append(float(info_nce(np.asarray(q), np.asarray(q), jnp.asarray(queue.keys))))
        queue.enqueue(k_all)
    print("RESULT gathered_rows", int(all_ids.shape[0]))
    print("RESULT queue_checksum", round(float(np.abs(queue.keys).sum()), 4))
    print("RESULT queue_ptr", queue.ptr)


main()

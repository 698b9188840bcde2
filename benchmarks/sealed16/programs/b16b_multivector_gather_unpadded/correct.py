# ColPali-style contrastive trainer: multi-vector document embeddings are padded across processes to a common length before the cross-rank gather
# Source: https://github.com/illuin-tech/colpali/pull/278
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM, BATCH, STEPS, LR = 32, 6, 3, 3, 0.5


def pad_across_processes(x, dim, pad_index=0, pad_first=False):
    """accelerate's pad_across_processes: pad `dim` to the largest size any process has."""
    sizes = np.asarray(multihost_utils.process_allgather(np.array([x.shape[dim]], np.int32))).ravel()
    target = int(sizes.max())
    if x.shape[dim] == target:
        return x
    pad = [(0, 0)] * x.ndim
    pad[dim] = (target - x.shape[dim], 0) if pad_first else (0, target - x.shape[dim])
    return np.pad(x, pad, constant_values=pad_index)


def concat_all_gather(x):
    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def collate(token_lists):
    """Pads each document to the longest document of this local batch (dynamic padding)."""
    width = max(len(t) for t in token_lists)
    ids = np.zeros((len(token_lists), width), np.int32)
    mask = np.zeros((len(token_lists), width), np.float32)
    for i, t in enumerate(token_lists):
        ids[i, -len(t):], mask[i, -len(t):] = t, 1.0
    return ids, mask


def embed(table, ids, mask):
    e = table[ids] * mask[..., None]
    return e / (jnp.linalg.norm(e, axis=-1, keepdims=True) + 1e-6)


@jax.jit
def loss_and_grad(table, q_ids, q_mask, all_docs, offset):
    def loss_fn(table):
        q = embed(table, q_ids, q_mask)                                     # [B, Lq, D]
        sim = jnp.einsum("bqd,ntd->bnqt", q, all_docs).max(-1).sum(-1)      # late interaction (MaxSim)
        labels = offset + jnp.arange(q.shape[0])
        return -jnp.mean(jax.nn.log_softmax(sim * 4.0, -1)[jnp.arange(q.shape[0]), labels])
    return jax.value_and_grad(loss_fn)(table)


class ContrastiveTrainer:
    def __init__(self):
        self.table = np.random.default_rng(0).normal(size=(VOCAB, DIM)).astype(np.float32)
        self.rank = jax.process_index()

    def compute_loss(self, batch):
        q_ids, q_mask = collate(batch["queries"])
        d_ids, d_mask = collate(batch["docs"])
        doc_outputs = np.asarray(embed(self.table, d_ids, d_mask))           # [B, L_local, D]
        doc_outputs = pad_across_processes(doc_outputs, dim=1, pad_index=0, pad_first=True)
        doc_outputs = concat_all_gather(doc_outputs)                          # gather docs across all processes
        offset = self.rank * len(batch["docs"])
        loss, g = loss_and_grad(self.table, q_ids, q_mask, doc_outputs, offset)
        g = np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
        self.table = self.table - LR * g
        return float(np.asarray(multihost_utils.process_allgather(np.array([loss], np.float32))).mean())


def local_batch(step, rank):
    rng = np.random.default_rng(77 + 5 * step + rank)
    max_doc = 6 if rank == 0 else 9                     # ranks see documents of different lengths
    docs = [list(rng.integers(1, VOCAB, size=rng.integers(3, max_doc + 1))) for _ in range(BATCH)]
    queries = [d[:2] + [int(rng.integers(1, VOCAB))] for d in docs]
    return {"queries": queries, "docs": docs}


def main():
    trainer = ContrastiveTrainer()
    losses = [round(trainer.compute_loss(local_batch(s, trainer.rank)), 4) for s in range(STEPS)]
    print("RESULT losses", losses)
    print("RESULT table_checksum", round(float(np.abs(trainer.table).sum()), 3))


if __name__ == "__main__":
    main()

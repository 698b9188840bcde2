import io
import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def rank():
    return jax.process_index()


def world_size():
    return jax.process_count()


def all_gather(x):
    """Gathers an array from every rank; result has a leading world_size axis."""
    return np.asarray(multihost_utils.process_allgather(np.asarray(x)))


_pickler = pickle.Pickler
_unpickler = pickle.Unpickler


def allgather_object(obj):
    f = io.BytesIO()
    _pickler(f).dump(obj)
    byte_tensor = np.frombuffer(f.getvalue(), dtype=np.uint8)
    all_bytes_tensors = all_gather(byte_tensor)
    obj_list = []
    for i in range(world_size()):
        buf = all_bytes_tensors[i].tobytes()
        obj_list.append(_unpickler(io.BytesIO(buf)).load())
    return obj_list


class ShardedCorpus:
    """Each rank owns a contiguous range of documents of a tokenized corpus."""

    def __init__(self, num_docs=24, seq_len=16, vocab=50):
        rng = np.random.default_rng(7)
        lengths = rng.integers(3, seq_len, size=num_docs)
        per_rank = num_docs // world_size()
        lo, hi = rank() * per_rank, (rank() + 1) * per_rank
        self.docs = [rng.integers(1, vocab, size=n) for n in lengths][lo:hi]
        self.doc_ids = list(range(lo, hi))
        self.seq_len = seq_len

    def batches(self, batch_size=4):
        for i in range(0, len(self.docs), batch_size):
            chunk = self.docs[i:i + batch_size]
            tokens = np.zeros((batch_size, self.seq_len), np.int32)
            mask = np.zeros((batch_size, self.seq_len), np.float32)
            for j, d in enumerate(chunk):
                tokens[j, :len(d)] = d
                mask[j, :len(d)] = 1.0
            yield tokens, mask


def train(corpus, vocab=50, dim=8, lr=0.1):
    params = {"emb": jnp.full((vocab, dim), 0.01), "out": jnp.zeros((dim, vocab))}

    def loss_fn(p, tokens, mask):
        h = p["emb"][tokens[:, :-1]]
        logits = h @ p["out"]
        logp = jax.nn.log_softmax(logits)
        tgt = jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]
        return -jnp.sum(tgt * mask[:, 1:]) / jnp.maximum(jnp.sum(mask[:, 1:]), 1.0)

    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    stats = {"rank": rank(), "tokens": 0, "losses": []}
    for tokens, mask in corpus.batches():
        loss, grads = grad_fn(params, tokens, mask)
        grads = jax.tree_util.tree_map(lambda g: all_gather(g).mean(0), grads)
        params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        stats["tokens"] += int(mask.sum())
        stats["losses"].append(round(float(loss), 3))
    return params, stats


def main():
    corpus = ShardedCorpus()
    params, stats = train(corpus)
    stats["long_docs"] = [i for i, d in zip(corpus.doc_ids, corpus.docs) if len(d) > 10]
    print(f"rank {rank()}: {stats['tokens']} tokens, last loss {stats['losses'][-1]}")
    report = allgather_object(stats)
    total_tokens = sum(r["tokens"] for r in report)
    print("RESULT total_tokens", total_tokens)
    print("RESULT per_rank_tokens", [r["tokens"] for r in sorted(report, key=lambda r: r["rank"])])
    print("RESULT long_docs", sorted(i for r in report for i in r["long_docs"]))
    print("RESULT out_norm", round(float(jnp.linalg.norm(params["out"])), 4))


if __name__ == "__main__":
    main()

# A reranker trainer validates MRR each epoch and keeps the best epoch; per-query scores are reduced across DP ranks
# Source: https://github.com/modelscope/ms-swift/pull/10088
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

QUERIES_PER_RANK, CANDS, FEAT, EPOCHS, STEPS_PER_EPOCH, LR = 6, 5, 8, 3, 2, 0.3
MESH = Mesh(np.array(jax.devices()), ("dp",))


def rank_data(rank, seed):
    """This DP rank's shard: candidate features per query, relevance labels (some queries have no positive)."""
    rng = np.random.default_rng(seed + 97 * rank)
    feats = rng.normal(size=(QUERIES_PER_RANK, CANDS, FEAT)).astype(np.float32)
    labels = (rng.random((QUERIES_PER_RANK, CANDS)) < 0.25).astype(np.float32)
    feats[..., 0] += 1.5 * labels  # relevant candidates are separable along feature 0
    return feats, labels


def shard(a):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("dp")), a)


@jax.jit
def train_step(w, feats, labels):
    def loss_fn(w):
        logits = feats @ w
        return jnp.mean(jnp.logaddexp(0.0, logits) - labels * logits)
    return w - LR * jax.grad(loss_fn)(w)


@jax.jit
def score(w, feats):
    return feats @ w


def local_mrr_terms(scores, labels):
    """Per valid query, the reciprocal rank of the best-ranked positive."""
    terms = []
    for s, y in zip(scores, labels):
        if y.sum() == 0:
            continue  # a query without positives is not a valid query
        order = np.argsort(-s, kind="stable")
        first = int(np.nonzero(y[order])[0][0])
        terms.append(1.0 / (first + 1))
    return np.array(terms, np.float64)


def validation_mrr(w, val_feats, val_labels):
    scores = score(w, shard(val_feats))
    local_scores = np.asarray(scores.addressable_shards[0].data)
    terms = local_mrr_terms(local_scores, val_labels)
    # MeanMetric-style reduction: sum and count of valid queries over all DP ranks
    total = multihost_utils.process_allgather(np.array([terms.sum(), len(terms)], np.float64)).sum(axis=0)
    return float(total[0] / max(total[1], 1.0))


def main():
    rank = jax.process_index()
    w = jnp.zeros((FEAT,), jnp.float32)
    val_feats, val_labels = rank_data(rank, seed=500)
    best_mrr, best_epoch = -1.0, -1
    for epoch in range(EPOCHS):
        for step in range(STEPS_PER_EPOCH):
            feats, labels = rank_data(rank, seed=10 * epoch + step)
            w = train_step(w, shard(feats), shard(labels))
        mrr = validation_mrr(w, val_feats, val_labels)
        if mrr > best_mrr:
            best_mrr, best_epoch = mrr, epoch
        print("RESULT epoch", epoch, "val_mrr", round(mrr, 5))
    print("RESULT best_epoch", best_epoch)


main()

# An SFT evaluation averages per-sample token accuracy with a MeanMetric whose reduction buffer is pinned to float32
# Source: https://github.com/modelscope/ms-swift/pull/9551
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SAMPLES_PER_PROC, MAX_LEN, VOCAB, DIM, IGNORE = 4, 12, 20, 8, -100
MESH = jax.make_mesh((jax.device_count(),), ("data",))


def load_eval_shard():
    """Samples are sorted by prompt length and split contiguously; a prompt that fills MAX_LEN leaves no response tokens."""
    rng = np.random.default_rng(5)
    n = SAMPLES_PER_PROC * jax.process_count()
    prompt_lens = np.sort(np.concatenate([rng.integers(3, 9, n // 2), rng.integers(MAX_LEN, 2 * MAX_LEN, n // 2)]))
    tokens = rng.integers(1, VOCAB, (n, MAX_LEN))
    lo = jax.process_index() * SAMPLES_PER_PROC
    mine, tokens = prompt_lens[lo:lo + SAMPLES_PER_PROC], tokens[lo:lo + SAMPLES_PER_PROC]
    labels = np.where(np.arange(MAX_LEN)[None, :] >= mine[:, None], np.roll(tokens, -1, axis=1), IGNORE)
    return tokens.astype(np.int32), labels.astype(np.int32)


@jax.jit
def forward(emb, tokens):
    h = jax.nn.one_hot(tokens, VOCAB) @ emb
    return jnp.argmax(h @ emb.T, axis=-1)


def compute_acc(preds, labels):
    accs = []
    for p, l in zip(preds, labels):
        m = l != IGNORE
        if m.any():
            accs.append(np.mean(p[m] == l[m]))
    return accs


class MeanMetric:
    def __init__(self):
        self.state, self.count = 0, 0

    def update(self, values):
        for v in values:
            self.state += v
            self.count += 1

    def compute(self):
        buf = np.array([self.state, self.count], dtype=np.float32)  # the same dtype on every process
        totals = np.asarray(multihost_utils.process_allgather(buf)).sum(axis=0)
        return float(totals[0]) / max(float(totals[1]), 1.0), float(totals[1])


def main():
    emb = jnp.asarray(np.random.default_rng(1).normal(size=(VOCAB, DIM)).astype(np.float32))
    tokens, labels = load_eval_shard()
    g_tokens = jax.make_array_from_process_local_data(NamedSharding(MESH, P("data")), tokens)
    preds = forward(emb, g_tokens)
    local_preds = np.concatenate([np.asarray(s.data) for s in preds.addressable_shards])
    metric = MeanMetric()
    metric.update(compute_acc(local_preds, labels))
    acc, n = metric.compute()
    print("RESULT eval_acc", round(acc, 5))
    print("RESULT eval_samples", n)


main()

# PyText-style document classification with a sharded data source: each worker reads its own
# shard of the training TSV; tensorizers (token hashing, label vocabulary) are initialized from
# the training rows before the model is built, then the model trains data-parallel.
import os
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

INTENTS = {"alarm/set_alarm": ["wake", "alarm", "morning", "set"],
           "weather/find": ["rain", "weather", "sunny", "forecast"],
           "music/play": ["play", "song", "music", "album"],
           "reminder/create": ["remind", "remember", "call", "tomorrow"]}
FILLER = ["me", "the", "please", "at", "for", "a", "today", "now"]


def make_rows(seed, n):
    rng = np.random.default_rng(seed)
    names = list(INTENTS)
    rows = []
    for _ in range(n):
        label = names[rng.integers(len(names))]
        words = list(rng.choice(INTENTS[label], 2)) + list(rng.choice(FILLER, 3))
        rng.shuffle(words)
        rows.append({"text": " ".join(words), "label": label})
    return rows


class ShardedTSVDataSource:
    def __init__(self, rows, rank, world_size):
        self._rows = rows
        self.rank, self.world_size = rank, world_size

    @property
    def train(self):
        return self._rows[self.rank::self.world_size]

    @property
    def train_unsharded(self):
        return self._rows


class TokenTensorizer:
    def __init__(self, dim=64):
        self.dim = dim

    def numberize(self, row):
        vec = np.zeros(self.dim, np.float32)
        for tok in row["text"].split():
            vec[zlib.crc32(tok.encode()) % self.dim] += 1.0
        return vec


class LabelTensorizer:
    def __init__(self):
        self.vocab = []

    def initialize(self, rows):
        for row in rows:
            if row["label"] not in self.vocab:
                self.vocab.append(row["label"])

    def numberize(self, row):
        return self.vocab.index(row["label"])


@jax.jit
def loss_and_grad(params, x, y):
    def xent(p):
        logp = jax.nn.log_softmax(x @ p["w"] + p["b"])
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
    return jax.value_and_grad(xent)(params)


def train(data_source, epochs=3, batch_size=8, lr=0.5):
    tokens, labels = TokenTensorizer(), LabelTensorizer()
    labels.initialize(data_source.train)
    rows = data_source.train
    x = np.stack([tokens.numberize(r) for r in rows])
    y = np.array([labels.numberize(r) for r in rows], np.int32)
    params = {"w": jnp.zeros((tokens.dim, len(labels.vocab))), "b": jnp.zeros(len(labels.vocab))}
    for _ in range(epochs):
        for i in range(0, len(rows) - batch_size + 1, batch_size):
            _, grads = loss_and_grad(params, x[i:i + batch_size], y[i:i + batch_size])
            grads = jax.tree_util.tree_map(
                lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), grads)
            params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, tokens, labels


def main():
    rank, world = jax.process_index(), jax.process_count()
    data_source = ShardedTSVDataSource(make_rows(2019, 96), rank, world)
    params, tokens, labels = train(data_source)
    test_rows = make_rows(7, 12)
    logits = np.stack([tokens.numberize(r) for r in test_rows]) @ np.asarray(params["w"]) + np.asarray(params["b"])
    predictions = [labels.vocab[i] for i in logits.argmax(-1)]
    accuracy = float(np.mean([p == r["label"] for p, r in zip(predictions, test_rows)]))
    print(f"rank {rank}: label vocab {labels.vocab}")
    print("RESULT predictions", predictions)
    print("RESULT accuracy", round(accuracy, 4))


if __name__ == "__main__":
    main()

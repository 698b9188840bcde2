# Bucketed batches are trimmed to a multiple of the worker count before they are sharded over workers
# Source: https://github.com/tensorflow/tensorflow/issues/19952
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import bisect
import collections
import os
from typing import Callable, Iterable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, BATCH_SIZE, BUCKET_BOUNDARIES = 16, 4, [5, 9, 13]


def corpus() -> list[np.ndarray]:
    return [np.arange(3 + (i * 7) % 13, dtype=np.int32) % VOCAB + 1 for i in range(40)]


class Dataset:
    """A tiny chainable pipeline in the style of tf.data."""

    def __init__(self, make_iter: Callable[[], Iterator]):
        self._make_iter = make_iter

    @classmethod
    def from_list(cls, items: list) -> "Dataset":
        return cls(lambda: iter(items))

    def apply(self, fn: Callable[[Iterable], Iterator]) -> "Dataset":
        return Dataset(lambda: fn(self._make_iter()))

    def shard(self, num_shards: int, index: int) -> "Dataset":
        return Dataset(lambda: (x for i, x in enumerate(self._make_iter()) if i % num_shards == index))

    def take(self, n: int) -> "Dataset":
        return Dataset(lambda: (x for i, x in zip(range(n), self._make_iter())))

    def __iter__(self):
        return self._make_iter()


def bucket_by_sequence_length(boundaries: list[int], batch_size: int):
    def _pad(seqs):
        width = max(len(s) for s in seqs)
        return np.stack([np.pad(s, (0, width - len(s))) for s in seqs])

    def _fn(examples: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        buckets = collections.defaultdict(list)
        for ex in examples:
            b = bisect.bisect_left(boundaries, len(ex))
            buckets[b].append(ex)
            if len(buckets[b]) == batch_size:
                yield _pad(buckets.pop(b))
        for b in sorted(buckets):  # remaining partial batches
            yield _pad(buckets[b])
    return _fn


def make_input_fn(num_workers: int, worker_index: int) -> Dataset:
    ds = Dataset.from_list(corpus())
    ds = ds.apply(bucket_by_sequence_length(BUCKET_BOUNDARIES, BATCH_SIZE))
    # Count the batches once and keep a multiple of num_workers, so every worker gets as many batches.
    num_batches = sum(1 for _ in ds)
    ds = ds.take(num_batches // num_workers * num_workers)
    return ds.shard(num_workers, worker_index)


@jax.jit
def local_grad(emb, tokens):
    def loss(e):
        mask = (tokens > 0).astype(jnp.float32)
        pooled = jnp.sum(e[tokens] * mask, axis=1) / jnp.sum(mask, axis=1)
        return jnp.mean((pooled - 1.0) ** 2)
    return jax.value_and_grad(loss)(emb)


def allreduce_mean(x: jax.Array) -> np.ndarray:
    return np.asarray(multihost_utils.process_allgather(np.asarray(x))).mean(axis=0)


def train(ds: Dataset, lr: float = 0.5):
    emb = jnp.zeros((VOCAB + 1,), jnp.float32)
    losses = []
    for tokens in ds:
        loss, grad = local_grad(emb, jnp.asarray(tokens))
        emb = emb - lr * jnp.asarray(allreduce_mean(grad))
        losses.append(float(allreduce_mean(loss)))
    return emb, losses


def main():
    ds = make_input_fn(jax.process_count(), jax.process_index())
    emb, losses = train(ds)
    print("RESULT", f"steps={len(losses)} last_loss={losses[-1]:.5f}")
    print("RESULT", f"emb_sum={float(jnp.sum(emb)):.5f}")


if __name__ == "__main__":
    main()

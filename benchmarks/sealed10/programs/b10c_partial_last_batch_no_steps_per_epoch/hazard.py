# fit() without steps_per_epoch runs each worker's shard to exhaustion; one shard ends with a smaller batch
# Source: https://github.com/tensorflow/tensorflow/issues/36153
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
NUM_EXAMPLES, PER_WORKER_BATCH, EPOCHS = 11, 2, 2


class Dataset:
    """A tiny tf.data-like pipeline over in-memory examples."""

    def __init__(self, make_iter):
        self._make_iter = make_iter

    @classmethod
    def from_tensor_slices(cls, x, y):
        return cls(lambda: zip(x, y))

    def shard(self, num_shards, index):  # auto-shard policy DATA: every num_shards-th example
        return Dataset(lambda: itertools.islice(self._make_iter(), index, None, num_shards))

    def repeat(self):
        return Dataset(lambda: itertools.chain.from_iterable(self._make_iter() for _ in itertools.count()))

    def batch(self, n):
        def gen():
            it = self._make_iter()
            while chunk := list(itertools.islice(it, n)):
                yield np.stack([c[0] for c in chunk]), np.stack([c[1] for c in chunk])
        return Dataset(gen)

    def __iter__(self):
        return iter(self._make_iter())


def make_dataset():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(NUM_EXAMPLES, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -1.0, 0.5], np.float32))[:, None].astype(np.float32)
    ds = Dataset.from_tensor_slices(x, y).shard(jax.process_count(), jax.process_index())
    return ds.batch(PER_WORKER_BATCH)


def fit(dataset, epochs, lr=0.1):
    mesh = jax.make_mesh((jax.device_count(),), ("workers",), axis_types=(jax.sharding.AxisType.Auto,))
    data = NamedSharding(mesh, P("workers"))
    w = jax.device_put(np.zeros((3, 1), np.float32), NamedSharding(mesh, P()))
    step = jax.jit(lambda w, x, y: w - lr * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w))
    steps, seen = 0, 0
    for epoch in range(epochs):
        for x, y in dataset:
            xs = jax.make_array_from_process_local_data(data, x)
            w = step(w, xs, jax.make_array_from_process_local_data(data, y))
            steps, seen = steps + 1, seen + xs.shape[0]  # global batch size, as the progress bar counts it
    return w, steps, seen


def main():
    w, steps, seen = fit(make_dataset(), EPOCHS)
    print(f"RESULT steps {steps} examples_seen {seen}")
    print("RESULT w", np.round(np.asarray(w.addressable_data(0)).ravel(), 4).tolist())  # this process's replica


main()

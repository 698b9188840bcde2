# Data-parallel classifier training: the dataset is scattered to workers, sub datasets have equal length
# Source: https://github.com/chainer/chainermn/pull/61
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_EXAMPLES = 51
N_FEATURES = 6
BATCH_SIZE = 5
EPOCHS = 3
LR = 0.5


class SubDataset:
    def __init__(self, xs, ys, start, finish):
        idx = np.arange(start, finish) % len(xs)
        self.xs, self.ys = xs[idx], ys[idx]

    def __len__(self):
        return len(self.xs)


def scatter_dataset(xs, ys, comm_size, rank):
    """Split the dataset into sub datasets of equal length ceil(n / size), one per worker."""
    n_total = len(xs)
    n_sub = (n_total + comm_size - 1) // comm_size
    start = n_total * rank // comm_size
    finish = start + n_sub
    return SubDataset(xs, ys, start, finish)


def serial_iterator(ds, batch_size):
    """One pass over the sub dataset (repeat=False); the last batch may be short."""
    for b in range(0, len(ds), batch_size):
        yield ds.xs[b:b + batch_size], ds.ys[b:b + batch_size]


def make_dataset():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(N_EXAMPLES, N_FEATURES)).astype(np.float32)
    ys = (xs @ rng.normal(size=(N_FEATURES,)) > 0).astype(np.float32)
    return xs, ys


def loss_fn(w, x, y):
    logits = x @ w
    return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    data_sharding = NamedSharding(mesh, P("data"))
    xs, ys = make_dataset()
    train = scatter_dataset(xs, ys, jax.process_count(), jax.process_index())

    @jax.jit
    def update(w, x, y):
        loss, g = jax.value_and_grad(loss_fn)(w, x, y)
        return w - LR * g, loss

    w = jax.device_put(np.zeros((N_FEATURES,), np.float32), NamedSharding(mesh, P()))
    iterations = 0
    for epoch in range(EPOCHS):
        for x_local, y_local in serial_iterator(train, BATCH_SIZE):
            x = jax.make_array_from_process_local_data(data_sharding, x_local)
            y = jax.make_array_from_process_local_data(data_sharding, y_local)
            w, loss = update(w, x, y)
            iterations += 1
    w_host = np.asarray(w.addressable_shards[0].data)
    print("RESULT iterations", iterations)
    print("RESULT weights", np.round(w_host, 4).tolist())


if __name__ == "__main__":
    main()

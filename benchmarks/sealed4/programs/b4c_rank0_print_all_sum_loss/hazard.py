# The epoch loss is all-summed inside the rank-0 print, so only rank 0 enters the reduction
# Source: https://github.com/ml-explore/mlx/issues/1210
# Written for the mcjax sealed4 evaluation (not copied): a port of an MLX distributed (mx.distributed / MPI) training
# script bug to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("world",))
ROWS = NamedSharding(MESH, P("world"))


class distributed:
    """The two mx.distributed calls the script uses, on top of a global device mesh."""

    @staticmethod
    def init():
        return jax.process_index(), jax.process_count()

    @staticmethod
    def all_sum(x):
        local = np.asarray(x, np.float32).reshape(1, -1)
        return _sum_rows(jax.make_array_from_process_local_data(ROWS, local)).reshape(np.shape(x))


@jax.jit
def _sum_rows(x):
    return jnp.sum(x, axis=0)


def make_data(rank, num_batches, batch_size=16):
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(num_batches, batch_size, 3)).astype(np.float32)
    y = x @ np.array([0.5, -1.0, 2.0], np.float32) + 0.3
    return x, y


def loss_fn(params, x, y):
    w, b = params
    return jnp.mean((x @ w + b - y) ** 2)


@jax.jit
def local_step(params, x, y):
    return jax.value_and_grad(loss_fn)(params, x, y)


def train(num_epochs=4, lr=0.1):
    rank, size = distributed.init()
    x, y = make_data(rank, num_batches=5)
    params = (jnp.zeros((3,), jnp.float32), jnp.zeros((), jnp.float32))
    num_batches = x.shape[0]
    for epoch in range(num_epochs):
        epoch_loss = 0.0
        for i in range(num_batches):
            loss, grads = local_step(params, x[i], y[i])
            grads = jax.tree.map(lambda g: distributed.all_sum(g) / size, grads)  # average gradients
            params = jax.tree.map(lambda p, g: p - lr * g, params, grads)
            epoch_loss += float(loss)
        if rank == 0:
            print(f"Epoch {epoch + 1}, Loss: {float(distributed.all_sum(epoch_loss)) / num_batches / size:.4f}")
    return params


w, b = train()
print("RESULT w", np.round(np.asarray(w), 4).tolist())
print("RESULT b", round(float(b), 4))

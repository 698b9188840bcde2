# A JAX batch iterator over per-host dataset splits, with the cross-host batch synchronization turned off
# Source: https://github.com/ray-project/ray/pull/61630
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_BLOCKS, FEAT, LOCAL_BATCH, LR = 7, 6, 4, 0.05
MESH = Mesh(np.array(jax.devices()), ("data",))


def read_blocks():
    """The dataset's blocks, of uneven row counts, as the reader produced them."""
    rng = np.random.default_rng(21)
    sizes = [9, 4, 7, 6, 8, 3, 5]
    return [(rng.normal(size=(n, FEAT)).astype(np.float32), rng.normal(size=(n,)).astype(np.float32))
            for n in sizes]


def streaming_split(blocks, rank, world):
    """Non-equal split: whole blocks go to the hosts round-robin (host 0: 9+7+8+5 rows, host 1: 4+6+3)."""
    return blocks[rank::world]


def iter_local_batches(split, batch_size):
    x = np.concatenate([b[0] for b in split])
    y = np.concatenate([b[1] for b in split])
    for s in range(0, len(x), batch_size):
        yield x[s:s + batch_size], y[s:s + batch_size]


def iter_jax_batches(split, batch_size, synchronize=True):
    it = iter_local_batches(split, batch_size)
    sharding = NamedSharding(MESH, P("data"))
    while True:
        try:
            bx, by = next(it)
            has_batch, size = 1, len(bx)
        except StopIteration:
            bx = by = None
            has_batch, size = 0, 0
        if synchronize:
            stats = multihost_utils.process_allgather(np.array([has_batch, size], np.int32))
            if stats[:, 0].min() == 0:
                return  # some host is out of data: every host stops at this step
            size = int(stats[:, 1].min())  # every host contributes the same number of rows
            bx, by = bx[:size], by[:size]
        elif not has_batch:
            return
        yield (jax.make_array_from_process_local_data(sharding, bx),
               jax.make_array_from_process_local_data(sharding, by))


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * g, loss


def main():
    split = streaming_split(read_blocks(), jax.process_index(), jax.process_count())
    w = jnp.zeros((FEAT,), jnp.float32)
    steps, loss = 0, None
    for x, y in iter_jax_batches(split, LOCAL_BATCH, synchronize=False):
        w, loss = train_step(w, x, y)
        steps += 1
    print("RESULT steps", steps)
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w), 4).tolist())


main()

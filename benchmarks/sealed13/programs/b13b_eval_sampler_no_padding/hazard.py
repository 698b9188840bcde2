# Final evaluation uses an exact (non-padding) distributed eval sampler while each eval batch is a collective step
# Source: https://github.com/SeungjunNah/DeepDeblur-PyTorch/issues/44
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEAT, BATCH, LR, TRAIN_SIZE, TEST_SIZE = 6, 4, 0.1, 32, 25
MESH = Mesh(np.array(jax.devices()), ("data",))


def make_split(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEAT)).astype(np.float32)
    return x, (x @ np.linspace(1.0, -1.0, FEAT) > 0).astype(np.float32)


class DistributedSampler:
    """Training sampler: pads the index list so every replica gets ceil(n / world) indices."""

    def __init__(self, n, world, rank):
        self.n, self.world, self.rank = n, world, rank

    def indices(self):
        total = math.ceil(self.n / self.world) * self.world
        idx = list(range(self.n))
        idx += idx[: total - self.n]
        return idx[self.rank:total:self.world], [1.0] * (total // self.world)


class DistributedEvalSampler(DistributedSampler):
    """Evaluation sampler: every test sample exactly once, no duplicates."""

    def indices(self):
        idx = list(range(self.n))[self.rank::self.world]
        return idx, [1.0] * len(idx)


def batches(x, y, sampler):
    idx, weight = sampler.indices()
    idx, weight = np.array(idx, np.int64), np.array(weight, np.float32)
    for s in range(0, len(idx), BATCH):
        sl = idx[s:s + BATCH]
        yield x[sl], y[sl], weight[s:s + BATCH]


@jax.jit
def train_step(w, x, y, m):
    def loss_fn(w):
        p = jax.nn.sigmoid(x @ w)
        return -jnp.sum(m * (y * jnp.log(p + 1e-6) + (1 - y) * jnp.log(1 - p + 1e-6))) / jnp.sum(m)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - LR * g, loss


@jax.jit
def eval_step(w, x, y, m):
    correct = ((x @ w > 0).astype(jnp.float32) == y).astype(jnp.float32)
    return jnp.sum(correct * m), jnp.sum(m)


def main():
    world, rank = jax.process_count(), jax.process_index()
    sharding = NamedSharding(MESH, P("data"))
    put = lambda a: jax.make_array_from_process_local_data(sharding, a)
    xtr, ytr = make_split(TRAIN_SIZE, seed=1)
    xte, yte = make_split(TEST_SIZE, seed=2)
    w = jnp.zeros((FEAT,), jnp.float32)
    for epoch in range(3):
        for bx, by, bm in batches(xtr, ytr, DistributedSampler(TRAIN_SIZE, world, rank)):
            w, loss = train_step(w, put(bx), put(by), put(bm))
    hits = count = 0.0
    for bx, by, bm in batches(xte, yte, DistributedEvalSampler(TEST_SIZE, world, rank)):
        h, c = eval_step(w, put(bx), put(by), put(bm))
        hits, count = hits + float(h), count + float(c)
    multihost_utils.sync_global_devices("eval_done")
    print("RESULT train_loss", round(float(loss), 5))
    print("RESULT test_count", count)
    print("RESULT test_acc", round(hits / count, 5))


main()

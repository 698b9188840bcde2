# An ocean-emulator trainer deals whole equivalence-group batches to processes round-robin, after cutting the list to a multiple of the process count
# Source: https://github.com/m2lines/Samudra/pull/557
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BATCH, EPOCHS, LR, SEED, NFEAT = 4, 2, 0.05, 17, 6
GROUP_SIZES = {"control": 9, "ssp245": 8, "ssp585": 5}  # samples per forcing scenario
MESH = jax.make_mesh((jax.device_count(),), ("data",))


def build_dataset():
    rng = np.random.default_rng(SEED)  # the same catalogue on every process
    groups, n = {}, 0
    for name, size in GROUP_SIZES.items():
        groups[name] = list(range(n, n + size))
        n += size
    x = rng.normal(size=(n, NFEAT)).astype(np.float32)
    y = (x @ rng.normal(size=NFEAT) + 0.1 * rng.normal(size=n)).astype(np.float32)
    return groups, x, y


class EquivalenceGroupBatchSampler:
    """Batches never mix samples from different forcing scenarios; incomplete batches are dropped."""

    def __init__(self, groups, batch_size, seed):
        self.groups, self.batch_size, self.seed, self.epoch = groups, batch_size, seed, 0

    def __iter__(self):
        rng = random.Random(self.seed + self.epoch)
        for name in sorted(self.groups):
            idx = list(self.groups[name])
            rng.shuffle(idx)
            for s in range(0, len(idx) - self.batch_size + 1, self.batch_size):
                yield idx[s:s + self.batch_size]


class DistributedEquivalenceGroupBatchSampler:
    def __init__(self, inner, num_replicas, rank, shuffle=True):
        self._inner, self.num_replicas, self.rank, self.shuffle = inner, num_replicas, rank, shuffle

    def set_epoch(self, epoch):
        self._inner.epoch = epoch

    def __iter__(self):
        all_batches = list(self._inner)  # deterministic: the same list on every process
        if self.shuffle:
            random.Random(self._inner.seed + self._inner.epoch).shuffle(all_batches)
        all_batches = all_batches[:len(all_batches) // self.num_replicas * self.num_replicas]
        for i in range(self.rank, len(all_batches), self.num_replicas):
            yield all_batches[i]


def shard(a, spec=P("data")):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, spec), np.asarray(a, np.float32))


@jax.jit
def train_step(w, x, y):
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * grad, loss


def main():
    groups, x, y = build_dataset()
    sampler = DistributedEquivalenceGroupBatchSampler(
        EquivalenceGroupBatchSampler(groups, BATCH, SEED), jax.process_count(), jax.process_index())
    w = shard(np.zeros(NFEAT), P())
    steps, loss = 0, None
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        for batch in sampler:
            w, loss = train_step(w, shard(x[batch]), shard(y[batch]))
            steps += 1
    print("RESULT steps", steps)
    print("RESULT final_loss", round(float(loss), 5))
    print("RESULT weights", np.round(np.asarray(w), 4).tolist())


main()

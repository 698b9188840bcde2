# Batches of an unexpected size (the shuffled-in remainder batch) are skipped per host to avoid recompiling
# Source: https://github.com/pytorch/xla/pull/855
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
BATCH_SIZE = 4


def batch_by_size(num_examples: int, seed: int) -> list[np.ndarray]:
    """Fairseq-style: make batches first, then shuffle the batches (the remainder lands anywhere)."""
    idx = np.arange(num_examples)
    batches = [idx[i:i + BATCH_SIZE] for i in range(0, num_examples, BATCH_SIZE)]
    order = np.random.default_rng(seed).permutation(len(batches))
    return [batches[i] for i in order]


class HostShard:
    def __init__(self):
        # Host-local shard of the corpus: sizes differ by host.
        self.num_examples = 14 if jax.process_index() == 0 else 16
        rng = np.random.default_rng(100 + jax.process_index())
        self.src = rng.normal(size=(self.num_examples, 5)).astype(np.float32)

    def epoch(self, epoch: int):
        for b in batch_by_size(self.num_examples, seed=epoch):
            yield self.src[b]


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)
    return w - 0.1 * g, loss


shard = HostShard()
w = jax.device_put(jnp.full((5, 2), 0.4), REPL)
steps = 0
for epoch in range(2):
    for batch in shard.epoch(epoch):
        if batch.shape[0] != BATCH_SIZE:
            continue  # a bad-size batch would trigger a recompile: skip it
        w, loss = train_step(w, jax.make_array_from_process_local_data(DATA, batch))
        steps += 1

print("RESULT", steps, round(float(loss), 5))

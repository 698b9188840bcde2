# The remainder batch is padded to the fixed batch size with zero-weight rows instead of being skipped
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
def train_step(w, x, mask):
    def loss_fn(w):
        per_row = jnp.mean(jnp.tanh(x @ w) ** 2, axis=-1)
        return jnp.sum(per_row * mask) / jnp.maximum(jnp.sum(mask), 1.0)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.1 * g, loss


def pad_batch(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mask = np.zeros((BATCH_SIZE,), np.float32)
    mask[:batch.shape[0]] = 1.0
    padded = np.zeros((BATCH_SIZE,) + batch.shape[1:], batch.dtype)
    padded[:batch.shape[0]] = batch
    return padded, mask


shard = HostShard()
w = jax.device_put(jnp.full((5, 2), 0.4), REPL)
steps = 0
for epoch in range(2):
    for batch in shard.epoch(epoch):
        batch, mask = pad_batch(batch)  # the same shape on every host: no recompile, no skip
        w, loss = train_step(w, jax.make_array_from_process_local_data(DATA, batch),
                             jax.make_array_from_process_local_data(DATA, mask))
        steps += 1

print("RESULT", steps, round(float(loss), 5))

# Each host's local-shuffle batcher serves batches from one materialized block at a time, so a block boundary emits a short batch mid-stream
# Source: https://github.com/ray-project/ray/issues/66085
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEAT, BATCH_SIZE, SHUFFLE_BUFFER, LR, EPOCHS = 5, 8, 8, 0.05, 2
BLOCK_SIZES = [30, 16, 16, 10, 8]
MESH = Mesh(np.array(jax.devices()), ("data",))


def read_blocks():
    rng = np.random.default_rng(3)
    w_true = rng.normal(size=(FEAT,)).astype(np.float32)
    blocks = []
    for n in BLOCK_SIZES:
        x = rng.normal(size=(n, FEAT)).astype(np.float32)
        blocks.append((x, (x @ w_true).astype(np.float32)))
    return blocks


def streaming_split_equal(blocks, num_splits):
    """Whole blocks go to whichever split holds fewer rows; every split ends with the same row count."""
    outputs, rows = [[] for _ in range(num_splits)], [0] * num_splits
    for block in blocks:
        k = int(np.argmin(rows))
        outputs[k].append(block)
        rows[k] += len(block[0])
    assert len(set(rows)) == 1, rows
    return outputs


class ShuffleBatcher:
    """Local in-memory shuffle buffer: rows are added block by block and served in batches."""

    def __init__(self, batch_size, min_buffer, seed):
        self.batch_size, self.min_buffer = batch_size, min_buffer
        self.rng = np.random.default_rng(seed)
        self.pending, self.current, self.pos = [], None, 0
        self.done = False

    def add(self, block):
        self.pending.append(block)

    def _available(self):
        cur = 0 if self.current is None else len(self.current[0]) - self.pos
        return cur + sum(len(b[0]) for b in self.pending)

    def has_batch(self):
        need = 1 if self.done else max(self.min_buffer, self.batch_size)
        return self._available() >= need

    def _materialize(self):
        x = np.concatenate([b[0] for b in self.pending])
        y = np.concatenate([b[1] for b in self.pending])
        perm = self.rng.permutation(len(x))
        self.current, self.pos, self.pending = (x[perm], y[perm]), 0, []

    def next_batch(self):
        if self.current is None or self.pos >= len(self.current[0]):
            self._materialize()
        x, y = self.current
        end = min(self.pos + self.batch_size, len(x))
        batch = (x[self.pos:end], y[self.pos:end])
        self.pos = end
        return batch


def iter_batches(split):
    batcher = ShuffleBatcher(BATCH_SIZE, SHUFFLE_BUFFER, seed=11)
    for block in split:
        batcher.add(block)
        while batcher.has_batch():
            yield batcher.next_batch()
    batcher.done = True
    while batcher.has_batch():
        yield batcher.next_batch()


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * g, loss


def main():
    split = streaming_split_equal(read_blocks(), jax.process_count())[jax.process_index()]
    sharding = NamedSharding(MESH, P("data"))
    w = jnp.zeros((FEAT,), jnp.float32)
    steps, loss = 0, None
    for _ in range(EPOCHS):
        for bx, by in iter_batches(split):
            x = jax.make_array_from_process_local_data(sharding, bx)
            y = jax.make_array_from_process_local_data(sharding, by)
            w, loss = train_step(w, x, y)
            steps += 1
    print("RESULT steps", steps)
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w), 4).tolist())


main()

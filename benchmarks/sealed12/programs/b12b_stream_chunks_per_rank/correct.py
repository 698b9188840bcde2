# A streaming token dataset assigns its samples (block_size windows from variable-size chunks) evenly across ranks
# Source: https://github.com/Lightning-AI/litData/issues/233
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BLOCK, VOCAB, DIM, BATCH, LR = 10, 50, 16, 2, 0.3
CHUNK_TOKENS = [70, 120, 50, 90, 60, 110]  # optimize() wrote chunks of uneven length
MESH = Mesh(np.array(jax.devices()), ("data",))


class TokensLoader:
    """Cuts each chunk's token stream into non-overlapping windows of block_size + 1."""

    def __init__(self, block_size):
        self.block_size = block_size

    def num_items(self, chunk_tokens):
        return chunk_tokens // self.block_size - 1


class StreamingDataset:
    def __init__(self, chunks, item_loader, rank, world, batch_size, drop_last=True):
        self.chunks, self.loader = chunks, item_loader
        self.rank, self.world, self.batch_size, self.drop_last = rank, world, batch_size, drop_last

    def _intervals(self):
        # every (chunk, item) pair as a global sample index
        return [(c, i) for c, toks in enumerate(self.chunks) for i in range(self.loader.num_items(len(toks)))]

    def assigned_samples(self):
        samples = self._intervals()
        per_rank = len(samples) // self.world
        if self.drop_last:
            per_rank -= per_rank % self.batch_size
        return samples[self.rank * per_rank:(self.rank + 1) * per_rank]

    def __iter__(self):
        mine = self.assigned_samples()
        for s in range(0, len(mine) - self.batch_size + 1, self.batch_size):
            rows = [self.chunks[c][i * BLOCK:(i + 1) * BLOCK + 1] for c, i in mine[s:s + self.batch_size]]
            yield np.stack(rows)


def make_chunks():
    rng = np.random.default_rng(11)  # every process reads the same optimized chunks
    return [rng.integers(0, VOCAB, size=n).astype(np.int32) for n in CHUNK_TOKENS]


def shard(a):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("data")), a)


@jax.jit
def train_step(params, batch):
    def loss_fn(p):
        logits = p["emb"][batch[:, :-1]] @ p["out"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, batch[:, 1:, None], axis=-1))
    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda a, b: a - LR * b, params, g), loss


def main():
    rng = np.random.default_rng(0)
    params = {"emb": jnp.asarray(rng.normal(0, 0.2, (VOCAB, DIM)).astype(np.float32)),
              "out": jnp.asarray(rng.normal(0, 0.2, (DIM, VOCAB)).astype(np.float32))}
    ds = StreamingDataset(make_chunks(), TokensLoader(BLOCK), jax.process_index(), jax.process_count(), BATCH)
    steps, losses = 0, []
    for batch in ds:
        params, loss = train_step(params, shard(batch))
        losses.append(float(loss))
        steps += 1
    print("RESULT steps", steps)
    print("RESULT last_loss", round(losses[-1], 5))
    print("RESULT mean_loss", round(float(np.mean(losses)), 5))


main()

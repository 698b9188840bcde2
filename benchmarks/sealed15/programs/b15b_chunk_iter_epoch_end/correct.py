# Chunked-audio training epoch: every chunk batch first agrees across processes that all of them still have one
# Source: https://github.com/espnet/espnet/pull/6517
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))


@dataclass
class ChunkConfig:
    chunk_length: int = 16
    batch_size: int = 2
    num_utts: int = 6
    feat_dim: int = 4


class ChunkIterFactory:
    """Splits every utterance of this rank into chunks; a rank holding longer audio yields more batches."""

    def __init__(self, cfg, rank):
        self.cfg = cfg
        rng = np.random.default_rng(7 + rank)
        lengths = rng.integers(16, 40 if rank == 0 else 80, size=cfg.num_utts)
        self.utts = [rng.normal(size=(int(n), cfg.feat_dim)).astype(np.float32) for n in lengths]

    def build_iter(self, epoch):
        cfg = self.cfg
        chunks = []
        for utt in self.utts:
            for s in range(0, len(utt) - cfg.chunk_length + 1, cfg.chunk_length):
                chunks.append(utt[s:s + cfg.chunk_length])
        order = np.random.default_rng(epoch).permutation(len(chunks))
        for b in range(0, len(order) - cfg.batch_size + 1, cfg.batch_size):
            yield np.stack([chunks[i] for i in order[b:b + cfg.batch_size]])


def batch_iterator(factory, epoch):
    it = factory.build_iter(epoch)
    while True:
        batch = next(it, None)
        has_next = np.array([batch is not None], np.int32)
        if int(np.asarray(multihost_utils.process_allgather(has_next)).min()) == 0:   # all ranks stop together
            return
        yield batch


def make_global(local):
    return multihost_utils.host_local_array_to_global_array(local, MESH, P("dp"))


@jax.jit
def train_step(w, batch):
    def loss_fn(w):
        pred = batch[:, :-1] @ w
        return jnp.mean((pred - batch[:, 1:]) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.05 * g, loss


def run_epoch(w, factory, epoch):
    losses = []
    for batch in batch_iterator(factory, epoch):
        w, loss = train_step(w, make_global(batch))
        losses.append(float(loss))
    return w, losses


def main():
    cfg = ChunkConfig()
    factory = ChunkIterFactory(cfg, jax.process_index())
    w = jnp.eye(cfg.feat_dim, dtype=jnp.float32) * 0.5
    for epoch in range(2):
        w, losses = run_epoch(w, factory, epoch)
        print(f"RESULT epoch {epoch} steps {len(losses)} last_loss {losses[-1]:.5f}")
    multihost_utils.sync_global_devices("validation")
    print("RESULT w", np.round(np.asarray(multihost_utils.process_allgather(w, tiled=True)).sum(), 5))


if __name__ == "__main__":
    main()

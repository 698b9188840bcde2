# A streaming dataset is split by host and again by loader worker; the nested split composes the rank from the already-multiplied world size
# Source: https://github.com/huggingface/datasets/issues/6990
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
from dataclasses import dataclass
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_EXAMPLES, FEAT, LOADER_WORKERS, PER_WORKER_BATCH, LR = 96, 8, 2, 3, 0.05
MESH = Mesh(np.array(jax.devices()), ("data",))


@dataclass
class DistributedConfig:
    rank: int
    world_size: int


class StreamingDataset:
    """An iterable dataset that, once split, keeps one example out of `world_size`."""

    def __init__(self, num_examples, distributed: Optional[DistributedConfig] = None):
        self.num_examples = num_examples
        self.distributed = distributed

    def __iter__(self):
        rng = np.random.default_rng(1234)
        w_true = np.linspace(-1.0, 1.0, FEAT).astype(np.float32)
        for i in range(self.num_examples):
            x = rng.normal(size=(FEAT,)).astype(np.float32)
            y = np.float32(x @ w_true + 0.1 * rng.normal())
            if self.distributed is None or i % self.distributed.world_size == self.distributed.rank:
                yield x, y


def split_dataset_by_node(ds, rank, world_size):
    """Split for node `rank` of `world_size`; splitting an already split dataset nests the two splits."""
    if ds.distributed is not None:
        world_size = world_size * ds.distributed.world_size
        rank = world_size * ds.distributed.rank + rank
    return StreamingDataset(ds.num_examples, DistributedConfig(rank=rank, world_size=world_size))


def host_batches(ds):
    """Each loader worker re-splits the host's dataset; the host interleaves the workers' batches."""
    workers = [iter(split_dataset_by_node(ds, w, LOADER_WORKERS)) for w in range(LOADER_WORKERS)]
    while True:
        rows = []
        for it in workers:
            for _ in range(PER_WORKER_BATCH):
                item = next(it, None)
                if item is None:
                    return
                rows.append(item)
        yield np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * g, loss


def main():
    ds = StreamingDataset(NUM_EXAMPLES)
    ds = split_dataset_by_node(ds, jax.process_index(), jax.process_count())
    sharding = NamedSharding(MESH, P("data"))
    w = jnp.zeros((FEAT,), jnp.float32)
    steps, losses = 0, []
    for bx, by in host_batches(ds):
        x = jax.make_array_from_process_local_data(sharding, bx)
        y = jax.make_array_from_process_local_data(sharding, by)
        w, loss = train_step(w, x, y)
        losses.append(float(loss))
        steps += 1
    total_steps = multihost_utils.process_allgather(np.array([steps], np.int32))
    print("RESULT steps", steps)
    print("RESULT steps_all", np.asarray(total_steps).reshape(-1).tolist())
    print("RESULT final_loss", round(losses[-1], 5) if losses else None)
    print("RESULT w", np.round(np.asarray(w), 4).tolist())


main()

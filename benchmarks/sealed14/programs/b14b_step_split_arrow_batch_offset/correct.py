# Round-robin node split counts examples across Arrow batches, so every rank gets its share of a single-shard stream
# Source: https://github.com/huggingface/datasets/issues/8079
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


@dataclass
class DistributedConfig:
    rank: int
    world_size: int


class SingleShardTarSource:
    """A streaming WebDataset with one tar shard; its Arrow path yields one-row record batches."""

    n_shards = 1

    def __init__(self, num_samples):
        self.num_samples = num_samples

    def iter_arrow(self):
        for i in range(self.num_samples):
            feats = np.random.default_rng(i).normal(size=(1, 4)).astype(np.float32)
            yield {"key": np.array([i]), "x": feats, "y": feats.sum(axis=1) * 0.5}


class StepExamplesIterable:
    """world_size > n_shards: fall back to keeping one example out of `step`, starting at `offset`."""

    def __init__(self, ex_iterable, step, offset):
        self.ex_iterable, self.step, self.offset = ex_iterable, step, offset

    def iter_arrow(self):
        seen = 0
        for table in self.ex_iterable.iter_arrow():
            n = len(table["key"])
            keep = [i for i in range(n) if (seen + i) % self.step == self.offset]
            seen += n
            if keep:
                yield {k: v[keep] for k, v in table.items()}


def split_dataset_by_node(source, cfg: DistributedConfig):
    if source.n_shards % cfg.world_size == 0:
        raise NotImplementedError("shard-level split not needed for this job")
    return StepExamplesIterable(source, step=cfg.world_size, offset=cfg.rank)


def batched(iterable, batch_size):
    xs, ys = [], []
    for table in iterable.iter_arrow():
        xs.append(table["x"]), ys.append(table["y"])
        if sum(len(x) for x in xs) == batch_size:
            yield np.concatenate(xs), np.concatenate(ys)
            xs, ys = [], []


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * g, loss


def main():
    cfg = DistributedConfig(jax.process_index(), jax.process_count())
    ds = split_dataset_by_node(SingleShardTarSource(num_samples=16), cfg)
    w = jax.device_put(np.zeros((4,), np.float32), REPL)
    steps, loss = 0, jnp.zeros(())
    for x, y in batched(ds, batch_size=2):
        w, loss = train_step(w, jax.make_array_from_process_local_data(DATA, x),
                             jax.make_array_from_process_local_data(DATA, y))
        steps += 1
    multihost_utils.sync_global_devices("epoch done")
    print("RESULT steps", steps)
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()

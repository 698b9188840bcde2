# Parquet reader sharded by row group for data-parallel training: each process trains one pass over its own shard
# Source: https://github.com/uber/petastorm/issues/508
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class DatasetMeta:
    row_group_sizes: tuple = (40, 24, 32, 16, 24)   # rows per parquet row group (the atomic shard unit)
    num_features: int = 3
    batch_size: int = 8
    epochs: int = 2

    @property
    def total_rows(self):
        return sum(self.row_group_sizes)


def read_row_group(meta, g):
    rng = np.random.default_rng(1000 + g)
    x = rng.normal(size=(meta.row_group_sizes[g], meta.num_features)).astype(np.float32)
    y = (x @ np.array([0.5, -1.0, 2.0], np.float32) + 0.1).astype(np.float32)
    return x, y


def make_reader(meta, cur_shard, shard_count, num_epochs):
    """Yields rows of the row groups assigned to this shard (row group g goes to shard g % shard_count)."""
    epoch = 0
    while num_epochs is None or epoch < num_epochs:
        for g in range(cur_shard, len(meta.row_group_sizes), shard_count):
            x, y = read_row_group(meta, g)
            yield from zip(x, y)
        epoch += 1


def batches(rows, batch_size):
    buf = []
    for row in rows:
        buf.append(row)
        if len(buf) == batch_size:
            yield np.stack([r[0] for r in buf]), np.stack([r[1] for r in buf])
            buf = []


def loss_fn(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(loss_fn)(w, x, y)   # mean over the global (all-process) batch
    return w - 0.05 * g, loss


def main():
    meta = DatasetMeta()
    rank, world = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    data_sharding = NamedSharding(mesh, P("dp"))
    w = jnp.zeros((meta.num_features,), jnp.float32)
    losses = []
    for epoch in range(meta.epochs):
        reader = make_reader(meta, cur_shard=rank, shard_count=world, num_epochs=1)
        for x, y in batches(reader, meta.batch_size):
            gx = jax.make_array_from_process_local_data(data_sharding, x)
            gy = jax.make_array_from_process_local_data(data_sharding, y)
            w, loss = train_step(w, gx, gy)
        losses.append(round(float(loss), 5))
    multihost_utils.sync_global_devices("training done")
    print("RESULT epoch_losses", losses)
    print("RESULT weights", [round(float(v), 5) for v in w])


if __name__ == "__main__":
    main()

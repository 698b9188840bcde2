# Each process streams its own shards (split by node); shards differ in length, so one process runs out first
# Source: https://github.com/huggingface/datasets/issues/6623
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from itertools import chain, cycle

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_SHARDS, BATCH, DIM = 4, 2, 3
END = object()


def shard_generator(shard):
    """A streamed file: shards do not hold the same number of examples."""
    rng = np.random.default_rng(shard)
    for i in range(3 + shard):
        yield {"x": rng.normal(size=DIM).astype(np.float32), "y": np.float32(shard + 0.1 * i)}


def split_dataset_by_node(num_shards, rank, world_size):
    # num_shards % world_size == 0, so whole shards are assigned to each node
    return [s for s in range(num_shards) if s % world_size == rank]


def batched(shards, batch_size):
    buf = []
    for ex in chain.from_iterable(shard_generator(s) for s in shards):
        buf.append(ex)
        if len(buf) == batch_size:
            yield np.stack([e["x"] for e in buf]), np.stack([e["y"] for e in buf])
            buf = []


class Regressor:
    def __init__(self, mesh):
        self.rows = NamedSharding(mesh, P("data"))
        self.w = jax.device_put(np.zeros((DIM,), np.float32), NamedSharding(mesh, P()))
        self._step = jax.jit(lambda w, x, y: w - 0.1 * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w))

    def step(self, x, y):
        gx = jax.make_array_from_process_local_data(self.rows, x)
        gy = jax.make_array_from_process_local_data(self.rows, y)
        self.w = self._step(self.w, gx, gy)


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    shards = split_dataset_by_node(NUM_SHARDS, jax.process_index(), jax.process_count())
    model = Regressor(mesh)
    steps = 0
    for batch in batched(shards, BATCH):
        model.step(*batch)
        steps += 1
    w = multihost_utils.process_allgather(model.w, tiled=True)
    print("RESULT steps", steps)
    print("RESULT w", np.round(np.asarray(w).ravel()[:DIM], 4).tolist())


main()

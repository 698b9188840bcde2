# Streaming pre-training: every process reads its own shard files and runs data-parallel steps with gradient all-reduce
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/13498
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.experimental.shard_map import shard_map
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

# shard name -> number of records (as listed in the dataset index)
SHARD_INDEX = {
    "train-00000-of-00006": 40, "train-00001-of-00006": 36, "train-00002-of-00006": 44,
    "train-00003-of-00006": 40, "train-00004-of-00006": 20, "train-00005-of-00006": 40,
}
BATCH_SIZE = 16
FEATURES = 4
LR = 0.05


class StreamingShardDataset:
    """Iterable dataset: each rank streams the records of the shards assigned to it."""

    def __init__(self, index, rank, world_size):
        self.shards = sorted(index)[rank::world_size]
        self.index = index

    def _records(self, shard):
        seed = int(shard.split("-")[1])
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(self.index[shard], FEATURES)).astype(np.float32)
        return x, x.sum(axis=1, keepdims=True)

    def __iter__(self):
        buf_x, buf_y = [], []
        for shard in self.shards:
            x, y = self._records(shard)
            buf_x.append(x)
            buf_y.append(y)
        x, y = np.concatenate(buf_x), np.concatenate(buf_y)
        for start in range(0, len(x) - BATCH_SIZE + 1, BATCH_SIZE):
            yield x[start:start + BATCH_SIZE], y[start:start + BATCH_SIZE]


def make_train_step(mesh):
    def loss_fn(w, x, y):
        return jnp.mean((x @ w - y) ** 2)

    def step(w, x, y):
        loss, g = jax.value_and_grad(loss_fn)(w, x, y)
        g = jax.lax.pmean(g, "dp")
        return w - LR * g, jax.lax.pmean(loss, "dp")

    sharded = shard_map(step, mesh=mesh, in_specs=(P(), P("dp"), P("dp")), out_specs=(P(), P()),
                        check_rep=False)
    return jax.jit(sharded)


def fit(mesh, dataset):
    train_step = make_train_step(mesh)
    data_sharding = NamedSharding(mesh, P("dp"))
    w = jax.device_put(jnp.zeros((FEATURES, 1)), NamedSharding(mesh, P()))
    losses = []
    local_batches = np.array([sum(1 for _ in dataset)], np.int32)
    num_batches = int(np.min(multihost_utils.process_allgather(local_batches)))
    for batch_idx, (x, y) in enumerate(dataset):
        if batch_idx >= num_batches:
            break
        gx = jax.make_array_from_process_local_data(data_sharding, x)
        gy = jax.make_array_from_process_local_data(data_sharding, y)
        w, loss = train_step(w, gx, gy)
        losses.append(float(loss))
    return w, losses


def main():
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    dataset = StreamingShardDataset(SHARD_INDEX, jax.process_index(), jax.process_count())
    w, losses = fit(mesh, dataset)
    multihost_utils.sync_global_devices("end_of_epoch")
    print("RESULT steps", len(losses))
    print("RESULT final_loss", round(losses[-1], 5))
    print("RESULT weights", [round(float(v), 4) for v in np.asarray(w.addressable_shards[0].data).ravel()])


if __name__ == "__main__":
    main()

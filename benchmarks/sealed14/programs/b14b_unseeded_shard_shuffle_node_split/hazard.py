# Streaming dataset shuffled without a seed: each process permutes the shard list differently before the node split
# Source: https://github.com/huggingface/datasets/issues/5696
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

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
SHARD_SIZES = {"train-00000.parquet": 6, "train-00001.parquet": 10, "train-00002.parquet": 12, "train-00003.parquet": 8}
BASE_SEED, BATCH = 42, 2


class IterableShardedDataset:
    def __init__(self, shards, seed=None):
        self.shards, self.seed = list(shards), seed

    def shuffle(self, seed=None):
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))   # no seed given: draw one from the global RNG
        return IterableShardedDataset(self.shards, seed)

    def shard_order(self):
        if self.seed is None:
            return list(self.shards)
        return [self.shards[i] for i in np.random.default_rng(self.seed).permutation(len(self.shards))]


def split_dataset_by_node(ds, rank, world_size):
    order = ds.shard_order()
    assert len(order) % world_size == 0, "shard-level split"
    return order[rank::world_size]


def read_examples(shard_names):
    for name in shard_names:
        rng = np.random.default_rng(sum(map(ord, name)))
        for _ in range(SHARD_SIZES[name]):
            yield rng.normal(size=(3,)).astype(np.float32)


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - 1.0) ** 2))(w)
    return w - 0.05 * g, loss


def main():
    rank, world = jax.process_index(), jax.process_count()
    np.random.seed(BASE_SEED + rank)              # per-rank augmentation randomness
    ds = IterableShardedDataset(SHARD_SIZES).shuffle()
    my_shards = split_dataset_by_node(ds, rank, world)
    w = jax.device_put(np.zeros((3,), np.float32), REPL)
    steps, loss, buf = 0, jnp.zeros(()), []
    for ex in read_examples(my_shards):
        buf.append(ex)
        if len(buf) == BATCH:
            w, loss = train_step(w, jax.make_array_from_process_local_data(DATA, np.stack(buf)))
            steps, buf = steps + 1, []
    multihost_utils.sync_global_devices("epoch end")
    print("RESULT steps", steps)
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()

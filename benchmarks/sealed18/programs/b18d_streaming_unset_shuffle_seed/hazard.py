# Streaming dataset partitioned across processes from a shuffle seed that defaults to a random draw
# Source: https://github.com/mosaicml/streaming/pull/37
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SHARD_SAMPLES = [12, 9, 14, 11, 10, 8, 13, 11]


class World:
    def __init__(self):
        self.rank = jax.process_index()
        self.num_ranks = jax.process_count()


class StreamingDataset:
    def __init__(self, shard_sizes, batch_size, shuffle=True, shuffle_seed=None):
        self.world = World()
        self.shard_sizes = np.array(shard_sizes)
        self.batch_size = batch_size
        self.shuffle = shuffle
        if shuffle_seed is None:
            shuffle_seed = np.random.randint(1 << 31)
        self.shuffle_seed = shuffle_seed
        self.epoch = 0

    @property
    def num_samples(self):
        return int(self.shard_sizes.sum())

    def _partition(self, epoch):
        offsets = np.concatenate([[0], np.cumsum(self.shard_sizes)])
        order = np.arange(len(self.shard_sizes))
        rng = np.random.default_rng(self.shuffle_seed + epoch)
        if self.shuffle:
            order = rng.permutation(order)
        ids = np.concatenate([rng.permutation(np.arange(offsets[s], offsets[s + 1])) for s in order])
        per_rank = len(ids) // self.world.num_ranks
        per_rank -= per_rank % self.batch_size
        start = self.world.rank * per_rank
        return ids[start:start + per_rank]

    def __iter__(self):
        ids = self._partition(self.epoch)
        for i in range(0, len(ids), self.batch_size):
            yield ids[i:i + self.batch_size]
        self.epoch += 1

    def state_dict(self):
        return {"epoch": self.epoch, "shuffle_seed": int(self.shuffle_seed)}


def features(sample_ids):
    x = np.stack([np.sin(sample_ids * 0.1), np.cos(sample_ids * 0.07), np.ones_like(sample_ids, float)], 1)
    y = (sample_ids % 7).astype(np.float32)
    return x.astype(np.float32), y


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch_sharding = NamedSharding(mesh, P("data"))
    replicated = NamedSharding(mesh, P())
    dataset = StreamingDataset(SHARD_SAMPLES, batch_size=4)

    @jax.jit
    def train_step(w, x, y):
        loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - 0.05 * g, loss

    w = jax.device_put(jnp.zeros((3,), jnp.float32), replicated)
    seen = []
    for batch_ids in dataset:
        x, y = features(batch_ids)
        gx = jax.make_array_from_process_local_data(batch_sharding, x)
        gy = jax.make_array_from_process_local_data(batch_sharding, y)
        w, loss = train_step(w, gx, gy)
        seen.append(batch_ids)
    all_seen = np.asarray(multihost_utils.process_allgather(np.concatenate(seen)))
    print("RESULT epoch_coverage", len(np.unique(all_seen)), "of", all_seen.size)
    print("RESULT final_loss", round(float(loss.addressable_shards[0].data), 4))
    print("RESULT resume_state", dataset.state_dict())


if __name__ == "__main__":
    main()

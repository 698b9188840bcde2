# The per-host input pipeline batches its shard with drop_remainder=True, so every per-host batch
# has the same size on every host and the hosts run the same steps.
# Source: https://github.com/AI-Hypercomputer/maxdiffusion/pull/56
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Config:
    global_batch_size: int = 8
    num_records: int = 17
    seed: int = 0
    learning_rate: float = 0.1


class Dataset:
    """A tiny stand-in for the tf.data chain of the input pipeline (shard, map, shuffle, batch)."""

    def __init__(self, elements):
        self.elements = list(elements)

    def shard(self, num_shards, index):
        return Dataset(self.elements[index::num_shards])

    def map(self, fn):
        return Dataset(fn(e) for e in self.elements)

    def shuffle(self, seed):
        order = np.random.default_rng(seed).permutation(len(self.elements))
        return Dataset(self.elements[i] for i in order)

    def batch(self, batch_size, drop_remainder):
        out = []
        for start in range(0, len(self.elements), batch_size):
            chunk = self.elements[start:start + batch_size]
            if len(chunk) < batch_size and drop_remainder:
                break
            out.append(np.stack(chunk))
        return Dataset(out)

    def __iter__(self):
        return iter(self.elements)


def _parse_record(i):
    return np.full((4,), float(i % 7), dtype=np.float32)


def make_laion_train_iterator(config, mesh):
    ds = Dataset(range(config.num_records)).shard(jax.process_count(), jax.process_index())
    ds = ds.map(_parse_record).shuffle(seed=config.seed)
    ds = ds.batch(config.global_batch_size // jax.process_count(), drop_remainder=True)
    sharding = NamedSharding(mesh, P("data"))
    for local_batch in ds:
        yield jax.make_array_from_process_local_data(sharding, local_batch)


@jax.jit
def train_step(w, batch):
    loss_fn = lambda w: jnp.mean((batch @ w - 1.0) ** 2)
    return w - Config.learning_rate * jax.grad(loss_fn)(w)


def train(config):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    w = jax.device_put(jnp.zeros((4,)), NamedSharding(mesh, P()))
    steps = 0
    for batch in make_laion_train_iterator(config, mesh):
        w = train_step(w, batch)
        steps += 1
    return w, steps


w, steps = train(Config())
print("RESULT", steps, round(float(jnp.sum(w)), 5))

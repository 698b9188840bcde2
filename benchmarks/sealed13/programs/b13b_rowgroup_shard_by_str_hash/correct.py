# A parquet-style reader assigns row groups to shards by their integer row-group index, the same on every process
# Source: https://github.com/uber/petastorm/pull/247
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEAT, BATCH, LR = 4, 4, 0.02
MESH = Mesh(np.array(jax.devices()), ("data",))


@dataclass(frozen=True)
class RowGroup:
    path: str
    index: int
    num_rows: int


def dataset_metadata(url):
    """Row groups of the dataset: pairs of part files of 4, 8, ..., 256 rows, one row group per file."""
    sizes = [4 * 2 ** (k // 2) for k in range(14)]
    return [RowGroup(f"{url}/part-{i:05d}.parquet", i, n) for i, n in enumerate(sizes)]


def read_row_group(rg):
    rng = np.random.default_rng(rg.index)
    x = rng.normal(size=(rg.num_rows, FEAT)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5, 0.0], np.float32)).astype(np.float32)


class Reader:
    def __init__(self, url, cur_shard, shard_count, batch_size):
        row_groups = dataset_metadata(url)
        self.row_groups = [rg for rg in row_groups if self._shard_of(rg, shard_count) == cur_shard]
        self.batch_size = batch_size

    @staticmethod
    def _shard_of(rg, shard_count):
        return rg.index % shard_count

    def __iter__(self):
        buf_x, buf_y = np.zeros((0, FEAT), np.float32), np.zeros((0,), np.float32)
        for rg in self.row_groups:
            x, y = read_row_group(rg)
            buf_x, buf_y = np.concatenate([buf_x, x]), np.concatenate([buf_y, y])
            while len(buf_x) >= self.batch_size:
                yield buf_x[:self.batch_size], buf_y[:self.batch_size]
                buf_x, buf_y = buf_x[self.batch_size:], buf_y[self.batch_size:]


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * g, loss


def main():
    reader = Reader("file:///datasets/mnist_features", jax.process_index(), jax.process_count(), BATCH)
    sharding = NamedSharding(MESH, P("data"))
    w = jnp.zeros((FEAT,), jnp.float32)
    steps, loss = 0, None
    for bx, by in reader:
        w, loss = train_step(w, jax.make_array_from_process_local_data(sharding, bx),
                             jax.make_array_from_process_local_data(sharding, by))
        steps += 1
    print("RESULT steps", steps)
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w), 4).tolist())


main()

# Each process trains over its own shard until the shard runs out; shards hold different batch counts
# Source: https://github.com/pytorch/pytorch/issues/33148
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Config:
    records_per_rank: tuple = (44, 36)  # uneven split of the corpus, as in the report
    batch_size: int = 4
    dim: int = 3
    lr: float = 0.05


class ShardLoader:
    """Iterates this process's records in fixed-size batches (like a DataLoader over a local shard)."""

    def __init__(self, cfg: Config):
        rank = jax.process_index()
        n = cfg.records_per_rank[rank]
        rng = np.random.default_rng(100 + rank)
        self.x = rng.normal(size=(n, cfg.dim)).astype(np.float32)
        self.y = (self.x @ np.arange(1, cfg.dim + 1, dtype=np.float32)).astype(np.float32)
        self.bs = cfg.batch_size

    def __iter__(self):
        for start in range(0, len(self.x) - self.bs + 1, self.bs):
            yield self.x[start:start + self.bs], self.y[start:start + self.bs]


@jax.jit
def train_step(w, x, y, lr):
    grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)  # mean over the global batch: all-reduce
    return w - lr * grad


def has_next(it):
    try:
        return True, next(it)
    except StopIteration:
        return False, None


def main():
    cfg = Config()
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rows = NamedSharding(mesh, P("data"))
    w = jax.device_put(jnp.zeros((cfg.dim,)), NamedSharding(mesh, P()))
    loader = ShardLoader(cfg)
    steps = 0
    for epoch in range(2):
        it = iter(loader)
        while True:
            ok, batch = has_next(it)
            if not ok:
                break
            x = jax.make_array_from_process_local_data(rows, batch[0])
            y = jax.make_array_from_process_local_data(rows, batch[1])
            w = train_step(w, x, y, cfg.lr)
            steps += 1
    multihost_utils.sync_global_devices("end_of_training")
    print("RESULT steps", steps)
    print("RESULT w", np.round(np.asarray(w), 3).tolist())


main()

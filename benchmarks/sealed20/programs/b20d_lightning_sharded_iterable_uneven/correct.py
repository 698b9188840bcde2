# Data-parallel regression trained from a sharded iterable dataset: every process streams the
# shard files assigned to it and the per-step global batch is assembled across processes.
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
class Config:
    shard_sizes: tuple = (10, 15, 5, 10, 5, 15)
    batch_size: int = 5
    features: int = 4
    epochs: int = 2
    lr: float = 0.02


class ShardedIterableDataset:
    """Streams records shard by shard; each process reads only the shards assigned to it."""

    def __init__(self, shard_sizes, features, rank, world_size):
        self.shards = list(range(len(shard_sizes)))[rank::world_size]
        self.shard_sizes = shard_sizes
        self.features = features

    def read_shard(self, shard_id):
        rng = np.random.default_rng(1000 + shard_id)
        x = rng.normal(size=(self.shard_sizes[shard_id], self.features)).astype(np.float32)
        y = x @ np.arange(1, self.features + 1, dtype=np.float32) + 0.5
        return x, y.astype(np.float32)

    def __iter__(self):
        for shard_id in self.shards:
            x, y = self.read_shard(shard_id)
            yield from zip(x, y)


def batched(records, batch_size):
    buf = []
    for rec in records:
        buf.append(rec)
        if len(buf) == batch_size:
            yield np.stack([r[0] for r in buf]), np.stack([r[1] for r in buf])
            buf = []
    if buf:
        yield np.stack([r[0] for r in buf]), np.stack([r[1] for r in buf])


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.mesh = Mesh(np.array(jax.devices()), ("data",))
        self.sharding = NamedSharding(self.mesh, P("data"))
        self.params = {"w": jnp.zeros(cfg.features), "b": jnp.zeros(())}
        self.step_fn = jax.jit(jax.value_and_grad(loss_fn))
        self.global_step = 0

    def to_global(self, local):
        return jax.make_array_from_process_local_data(self.sharding, local)

    def training_step(self, x, y):
        loss, grads = self.step_fn(self.params, self.to_global(x), self.to_global(y))
        self.params = jax.tree_util.tree_map(lambda p, g: p - self.cfg.lr * g, self.params, grads)
        self.global_step += 1
        return float(loss)

    def fit_epoch(self, dataset):
        losses = []
        batches = batched(iter(dataset), self.cfg.batch_size)
        while True:
            batch = next(batches, None)
            have_batch = np.int32(batch is not None and len(batch[0]) == self.cfg.batch_size)
            if multihost_utils.process_allgather(have_batch).min() == 0:
                break
            losses.append(self.training_step(*batch))
        return losses

    def validate(self, dataset):
        x_all, y_all = map(np.concatenate, zip(*batched(iter(dataset), self.cfg.batch_size)))
        n = 10
        loss = jax.jit(loss_fn)(self.params, self.to_global(x_all[:n]), self.to_global(y_all[:n]))
        return float(loss)


def main():
    cfg = Config()
    rank, world = jax.process_index(), jax.process_count()
    dataset = ShardedIterableDataset(cfg.shard_sizes, cfg.features, rank, world)
    trainer = Trainer(cfg)
    for epoch in range(cfg.epochs):
        losses = trainer.fit_epoch(dataset)
        val_loss = trainer.validate(dataset)
        print(f"epoch {epoch}: steps={len(losses)} val_loss={val_loss:.4f}")
    print("RESULT global_step", trainer.global_step)
    print("RESULT val_loss", round(val_loss, 4))
    print("RESULT w", [round(float(v), 4) for v in trainer.params["w"]])


if __name__ == "__main__":
    main()

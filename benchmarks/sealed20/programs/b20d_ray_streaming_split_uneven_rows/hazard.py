# Ray-Train-style data-parallel training loop: the driver splits a block dataset into one stream
# per train worker (streaming_split) and each worker iterates its shard in fixed-size batches,
# averaging gradients across workers on every batch.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BLOCK_ROWS = [40, 25, 30, 45, 20, 35]
FEATURES = 3


def read_block(i):
    rng = np.random.default_rng(500 + i)
    x = rng.normal(size=(BLOCK_ROWS[i], FEATURES)).astype(np.float32)
    y = (x @ np.array([1.5, -2.0, 0.5], dtype=np.float32) + 0.1 * rng.normal(size=BLOCK_ROWS[i])).astype(np.float32)
    return {"x": x, "y": y}


class Dataset:
    def __init__(self, num_blocks):
        self.block_ids = list(range(num_blocks))

    def streaming_split(self, n, equal=False):
        splits = [self.block_ids[i::n] for i in range(n)]
        if not equal:
            return [DataIterator(b) for b in splits]
        rows = sum(BLOCK_ROWS[i] for i in self.block_ids) // n
        return [DataIterator(self.block_ids, start=k * rows, limit=rows) for k in range(n)]


class DataIterator:
    def __init__(self, block_ids, start=0, limit=None):
        self.block_ids, self.start, self.limit = block_ids, start, limit

    def _rows(self):
        x = np.concatenate([read_block(i)["x"] for i in self.block_ids])
        y = np.concatenate([read_block(i)["y"] for i in self.block_ids])
        end = len(x) if self.limit is None else self.start + self.limit
        return x[self.start:end], y[self.start:end]

    def iter_batches(self, batch_size):
        x, y = self._rows()
        for s in range(0, len(x), batch_size):
            yield {"x": x[s:s + batch_size], "y": y[s:s + batch_size]}


mesh = Mesh(np.array(jax.devices()), ("dp",))


@jax.jit
@partial(jax.shard_map, mesh=mesh, in_specs=(P(), P("dp"), P("dp")), out_specs=(P(), P()))
def train_step(w, x, y):
    def loss_fn(w):
        return jnp.mean((x @ w - y) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(w)
    n = jax.lax.psum(1, "dp")
    return jax.lax.psum(loss, "dp") / n, jax.lax.psum(g, "dp") / n


def train_loop_per_worker(shard, config):
    sharding = NamedSharding(mesh, P("dp"))
    w = jnp.zeros(FEATURES)
    history = []
    for epoch in range(config["num_epochs"]):
        losses = []
        for batch in shard.iter_batches(batch_size=config["batch_size"]):
            gx = jax.make_array_from_process_local_data(sharding, batch["x"])
            gy = jax.make_array_from_process_local_data(sharding, batch["y"])
            loss, g = train_step(w, gx, gy)
            w = w - config["lr"] * g
            losses.append(float(loss))
        metrics = np.asarray(multihost_utils.process_allgather(np.float32(np.mean(losses))))
        history.append(float(metrics.mean()))
        print(f"epoch {epoch}: batches={len(losses)} loss={history[-1]:.4f}")
    return w, history


def main():
    rank, world = jax.process_index(), jax.process_count()
    train_ds = Dataset(len(BLOCK_ROWS))
    shards = train_ds.streaming_split(world)
    config = {"num_epochs": 2, "batch_size": 16, "lr": 0.1}
    w, history = train_loop_per_worker(shards[rank], config)
    print("RESULT final_loss", round(history[-1], 4))
    print("RESULT weights", [round(float(v), 4) for v in w])


if __name__ == "__main__":
    main()

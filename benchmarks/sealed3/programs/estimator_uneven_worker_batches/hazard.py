# Estimator fit: each worker trains on its own partition; partitions hold different numbers of batches
# Source: https://github.com/intel/ipex-llm/pull/3626
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEATURES = 3


class XShards:
    """Rows stored in fixed-size blocks; blocks are handed to workers round robin."""

    def __init__(self, x: np.ndarray, y: np.ndarray, block_rows: int = 4):
        self.blocks = [(x[i:i + block_rows], y[i:i + block_rows]) for i in range(0, len(y), block_rows)]

    def partition_for(self, rank: int, world: int):
        mine = self.blocks[rank::world]
        return np.concatenate([b[0] for b in mine]), np.concatenate([b[1] for b in mine])


def data_loader(x, y, batch_size: int):
    for i in range(0, len(y) - batch_size + 1, batch_size):  # drop_last=True
        yield x[i:i + batch_size], y[i:i + batch_size], np.ones(batch_size, np.float32)


class TrainingOperator:
    def __init__(self, mesh, lr: float = 0.1):
        self.sharding = NamedSharding(mesh, P("data"))
        self.params = jnp.zeros((FEATURES,), jnp.float32)
        self.lr = lr
        self._step = jax.jit(self._sgd_step)

    def _sgd_step(self, params, x, y, w):
        def loss_fn(p):
            err = (x @ p - y) ** 2
            return jnp.sum(err * w) / jnp.maximum(jnp.sum(w), 1.0)
        loss, grad = jax.value_and_grad(loss_fn)(params)
        return params - self.lr * grad, loss

    def train_batch(self, batch):
        x, y, w = (jax.make_array_from_process_local_data(self.sharding, a) for a in batch)
        self.params, loss = self._step(self.params, x, y, w)
        return float(loss)

    def train_epoch(self, iterator) -> dict:
        losses = [self.train_batch(batch) for batch in iterator]
        return {"num_batches": len(losses), "last_loss": losses[-1]}


class TorchRunner:
    def __init__(self, operator: TrainingOperator, shards: XShards, batch_size: int):
        self.operator = operator
        self.x, self.y = shards.partition_for(jax.process_index(), jax.process_count())
        self.batch_size = batch_size

    def train_epochs(self, epochs: int) -> list[dict]:
        stats = []
        for _ in range(epochs):
            stats.append(self.operator.train_epoch(data_loader(self.x, self.y, self.batch_size)))
        return stats


def main():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(18, FEATURES)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    runner = TorchRunner(TrainingOperator(mesh), XShards(x, y), batch_size=2)
    stats = runner.train_epochs(epochs=2)
    print("RESULT", f"last_loss={stats[-1]['last_loss']:.5f}")
    print("RESULT", "params=" + ",".join(f"{v:.5f}" for v in np.asarray(runner.operator.params)))


if __name__ == "__main__":
    main()

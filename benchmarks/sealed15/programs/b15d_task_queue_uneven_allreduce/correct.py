# ElasticDL-style allreduce worker: each worker trains on the record-range tasks it was dispatched and all workers stop together once any worker runs out
# Source: https://github.com/sql-machine-learning/elasticdl/issues/1895
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


@dataclass
class JobConfig:
    features: int = 4
    minibatch_size: int = 16
    lr: float = 0.05
    # record counts of the shards the master cuts into tasks (the last shard is short)
    shard_records: list = field(default_factory=lambda: [64, 48, 64, 16])


class TaskDataService:
    """Yields minibatches from the tasks the master dispatched to this worker."""

    def __init__(self, cfg, worker_id, num_workers):
        self.cfg = cfg
        self.tasks = [(i, n) for i, n in enumerate(cfg.shard_records) if i % num_workers == worker_id]

    def _records(self, task_id, n):
        rng = np.random.default_rng(task_id)
        x = rng.normal(size=(n, self.cfg.features)).astype(np.float32)
        y = (x @ np.arange(1, self.cfg.features + 1, dtype=np.float32))[:, None]
        return x, y

    def minibatches(self):
        bs = self.cfg.minibatch_size
        for task_id, n in self.tasks:
            x, y = self._records(task_id, n)
            for s in range(0, n, bs):
                yield x[s:s + bs], y[s:s + bs]


@jax.jit
def train_step(w, x, y, lr):
    def loss_fn(w):
        return jnp.mean((x @ w - y) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(w)          # mean over the global batch: an allreduce
    return w - lr * g, loss


class AllReduceTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.w = jax.device_put(np.zeros((cfg.features, 1), np.float32), REPL)
        self.data = TaskDataService(cfg, jax.process_index(), jax.process_count())
        self.steps = 0

    def train(self):
        losses = []
        batches = self.data.minibatches()
        while True:
            batch = next(batches, None)
            # leave the loop only together: stop as soon as ANY worker has no more tasks
            have = multihost_utils.process_allgather(np.array(batch is not None))
            if not bool(np.all(have)):
                break
            x, y = batch
            gx = jax.make_array_from_process_local_data(ROWS, x)
            gy = jax.make_array_from_process_local_data(ROWS, y)
            self.w, loss = train_step(self.w, gx, gy, self.cfg.lr)
            losses.append(float(loss))
            self.steps += 1
        return losses


def main():
    trainer = AllReduceTrainer(JobConfig())
    losses = trainer.train()
    w = multihost_utils.process_allgather(trainer.w, tiled=True)
    print("RESULT steps", trainer.steps)
    print("RESULT final_loss", round(losses[-1], 4))
    print("RESULT weights", np.round(np.asarray(w).ravel(), 4).tolist())


if __name__ == "__main__":
    main()

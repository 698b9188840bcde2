# Only process 0 evaluates, and its eval data loader is built without the cross-process init synchronisation
# Source: https://github.com/rwth-i6/returnn/issues/1454
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_SUB_EPOCHS = 3
EVAL_EVERY = 1
BATCH = 2


class Dataset:
    def __init__(self, name, size, base_seed):
        self.name, self.size, self.base_seed = name, size, base_seed
        rng = np.random.default_rng(base_seed)
        self.x = rng.normal(size=(size, 4)).astype(np.float32)
        self.y = (self.x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)).astype(np.float32)


class DataLoaderIter:
    """Per-epoch iterator; in distributed mode every instance agrees on the shuffle seed at init."""

    def __init__(self, dataset, epoch, distributed=True):
        seed = dataset.base_seed * 1000 + epoch
        if distributed:
            seed = int(multihost_utils.broadcast_one_to_all(np.array(seed, np.int64)))
        self.dataset = dataset
        self.order = np.random.default_rng(seed).permutation(dataset.size)
        rank, world = (jax.process_index(), jax.process_count()) if distributed else (0, 1)
        self.order = self.order[rank::world]

    def __iter__(self):
        for i in range(0, len(self.order) - BATCH + 1, BATCH):
            idx = self.order[i:i + BATCH]
            yield self.dataset.x[idx], self.dataset.y[idx]


class Engine:
    def __init__(self):
        self.mesh = jax.make_mesh((jax.device_count(),), ("data",))
        self.data_sharding = NamedSharding(self.mesh, P("data"))
        self.params = jax.device_put(np.zeros((4,), np.float32), NamedSharding(self.mesh, P()))
        self.train_data = Dataset("train", 16, base_seed=1)
        self.dev_data = Dataset("dev", 6, base_seed=2)

        def step(w, x, y):
            grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
            return w - 0.05 * grad
        self._step = jax.jit(step)

    def train_epoch(self, epoch):
        for x, y in DataLoaderIter(self.train_data, epoch):
            gx = jax.make_array_from_process_local_data(self.data_sharding, x)
            gy = jax.make_array_from_process_local_data(self.data_sharding, y)
            self.params = self._step(self.params, gx, gy)

    def eval_model(self, epoch):
        w = np.asarray(self.params.addressable_data(0))
        losses = [float(np.mean((x @ w - y) ** 2)) for x, y in DataLoaderIter(self.dev_data, epoch, distributed=False)]
        print(f"epoch {epoch}: dev loss {np.mean(losses):.4f}")

    def train(self):
        for epoch in range(NUM_SUB_EPOCHS):
            self.train_epoch(epoch)
            if jax.process_index() == 0 and epoch % EVAL_EVERY == 0:
                self.eval_model(epoch)


def main():
    engine = Engine()
    engine.train()
    print("RESULT params", [round(float(v), 5) for v in np.asarray(engine.params.addressable_data(0))])


main()

# Streaming training with periodic validation: epoch end (and so validation) is reached by each process's own iterator
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/6798
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
CONFIG = {"batch_size": 4, "val_check_interval": 3, "lr": 0.05, "epochs": 1, "num_lines": [34, 29]}


class StreamingShard:
    """An iterable dataset: each process streams its own shard files, whose lengths are not known up front."""

    def __init__(self, rank, num_lines):
        self.rank, self.num_lines = rank, num_lines

    def __iter__(self):
        rng = np.random.default_rng(7 + self.rank)
        for _ in range(self.num_lines // CONFIG["batch_size"]):
            x = rng.normal(size=(CONFIG["batch_size"], 2)).astype(np.float32)
            yield x, (x @ np.array([2.0, -1.0], np.float32) + 0.5).astype(np.float32)


def loss_fn(params, x, y):
    return jnp.mean((jnp.sum(x * params["w"], axis=1) + params["b"] - y) ** 2)


train_grad = jax.jit(jax.value_and_grad(loss_fn), out_shardings=(REPL, REPL))


class Trainer:
    def __init__(self):
        self.params = {"w": jnp.zeros(2), "b": jnp.zeros(())}
        self.val_history = []

    def training_step(self, batch):
        gx, gy = (jax.make_array_from_process_local_data(ROWS, a) for a in batch)
        loss, grads = train_grad(self.params, gx, gy)
        self.params = jax.tree.map(lambda p, g: p - CONFIG["lr"] * g, self.params, grads)
        return float(loss)

    def validate(self):
        rng = np.random.default_rng(500 + jax.process_index())
        x = rng.normal(size=(8, 2)).astype(np.float32)
        y = x @ np.array([2.0, -1.0], np.float32) + 0.5
        local = float(loss_fn(jax.device_get(self.params), x, y))
        self.val_history.append(round(float(np.mean(multihost_utils.process_allgather(np.float32(local)))), 5))

    def fit(self, loader):
        for _ in range(CONFIG["epochs"]):
            batches = iter(loader)
            for batch_idx, batch in enumerate(batches, start=1):
                self.training_step(batch)
                if batch_idx % CONFIG["val_check_interval"] == 0:
                    self.validate()
            self.validate()                                    # end-of-epoch validation


def main():
    rank = jax.process_index()
    loader = StreamingShard(rank, num_lines=CONFIG["num_lines"][rank])
    trainer = Trainer()
    trainer.fit(loader)
    multihost_utils.sync_global_devices("fit done")
    print("RESULT val_history", trainer.val_history)
    print("RESULT w", np.round(np.asarray(trainer.params["w"]), 5).tolist())


if __name__ == "__main__":
    main()

# Early stopping decided on rank 0 and broadcast so that every DDP rank leaves the epoch loop together
# Source: https://github.com/ultralytics/yolov5/pull/8345
# Port to multi-process JAX of the YOLOv5 DDP early-stopping hang (train.py, EarlyStopping).
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RANK = jax.process_index()
MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())


class EarlyStopping:
    """Stop when fitness has not improved for `patience` epochs (YOLOv5 utils/torch_utils.py)."""

    def __init__(self, patience: int = 2):
        self.best_fitness = -np.inf
        self.best_epoch = 0
        self.patience = patience

    def __call__(self, epoch: int, fitness: float) -> bool:
        if fitness >= self.best_fitness:
            self.best_epoch = epoch
            self.best_fitness = fitness
        stop = (epoch - self.best_epoch) >= self.patience
        if stop:
            print(f"Stopping training early as no improvement observed in last {self.patience} epochs.")
        return stop


@partial(jax.jit, out_shardings=REPL)
def train_step(w, x):
    def loss_fn(w):
        return jnp.mean((x * w - x) ** 2)
    return w - 0.3 * jax.grad(loss_fn)(w) / jnp.mean(x * x)


def train_epoch(w, epoch: int):
    rng = np.random.default_rng(100 * epoch + RANK)
    local = rng.uniform(0.5, 1.5, size=(4, 1)).astype(np.float32)
    return train_step(w, jax.make_array_from_process_local_data(DATA, local))


def validate(w) -> float:
    # val.run() on the (EMA) model, single device, rank 0 only
    w_local = float(np.asarray(w.addressable_data(0))[0])
    return -round(abs(w_local - 0.5), 3)


def train(epochs: int = 8):
    w = jax.device_put(np.zeros((1,), np.float32), REPL)
    stopper, stop = EarlyStopping(patience=2), False
    for epoch in range(epochs):
        w = train_epoch(w, epoch)
        if RANK in {-1, 0}:
            fi = validate(w)
            stop = stopper(epoch=epoch, fitness=fi)
        # broadcast 'stop' to all ranks
        stop = bool(multihost_utils.broadcast_one_to_all(np.int32(stop)))
        if stop:
            break  # must break all DDP ranks
    return w, epoch


w, last_epoch = train()
final = train_step(w, jax.make_array_from_process_local_data(DATA, np.ones((4, 1), np.float32)))
print("RESULT last_epoch", last_epoch)
print("RESULT w", round(float(np.asarray(final.addressable_data(0))[0]), 4))

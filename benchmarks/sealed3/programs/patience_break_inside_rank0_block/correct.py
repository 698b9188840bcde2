# Patience is tested on rank 0 and the stop decision is broadcast so every rank leaves the epoch loop
# Source: https://github.com/ACEsuit/mace/pull/1216
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import logging
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
BATCH = NamedSharding(MESH, P("batch"))
REPLICATED = NamedSharding(MESH, P())


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.02 * g, loss


@jax.jit
def eval_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


class CheckpointHandler:
    def __init__(self):
        self.saved_epochs: list[int] = []

    def save(self, epoch: int) -> None:
        self.saved_epochs.append(epoch)


def local_split(seed: int, n: int = 8):
    rng = np.random.default_rng(seed + 31 * jax.process_index())
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + rng.normal(size=n) * 2.0).astype(np.float32)
    return (jax.make_array_from_process_local_data(BATCH, x),
            jax.make_array_from_process_local_data(BATCH, y))


def train(w, max_num_epochs: int, patience: int, eval_interval: int = 1):
    rank = jax.process_index()
    train_x, train_y = local_split(1)
    valid_x, valid_y = local_split(2)
    checkpoint_handler = CheckpointHandler()
    lowest_loss, patience_counter, epoch = np.inf, 0, 0
    while epoch < max_num_epochs:
        stop = False
        for _ in range(3):
            w, _ = train_step(w, train_x, train_y)
        multihost_utils.sync_global_devices(f"epoch_{epoch}_trained")
        if epoch % eval_interval == 0:
            valid_loss = float(eval_loss(w, valid_x, valid_y)) + 0.05 * epoch  # overfitting later on
            if rank == 0:
                logging.info("epoch %d valid loss %.4f", epoch, valid_loss)
                if valid_loss >= lowest_loss:
                    patience_counter += 1
                    if patience_counter >= patience:
                        logging.info("Stopping after %d epochs without improvement", patience_counter)
                        stop = True
                else:
                    lowest_loss, patience_counter = valid_loss, 0
                    checkpoint_handler.save(epoch)
            if bool(multihost_utils.broadcast_one_to_all(np.array(stop))):
                break
        multihost_utils.sync_global_devices(f"epoch_{epoch}_validated")
        epoch += 1
    return w, epoch


w0 = jax.device_put(np.zeros(4, np.float32), REPLICATED)
w, last_epoch = train(w0, max_num_epochs=40, patience=2)
print("RESULT last_epoch", last_epoch)
print("RESULT weights", np.round(np.asarray(w.addressable_data(0)), 3).tolist())

# Sharded (FSDP-style) T5-like fine-tuning: validation loss is reduced to process 0 only, yet every process uses it to decide whether to gather a full checkpoint
# Source: https://github.com/pytorch/pytorch/issues/77562
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
DIM, EPOCHS, LR = 8, 4, 0.1
CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed16_reduce_root_best_ckpt", os.environ.get("JOB_ID", "job"))


def dist_reduce_sum(value, dst=0):
    """torch.distributed.reduce(SUM, dst): only the destination holds the total, other ranks keep their input."""
    gathered = np.asarray(multihost_utils.process_allgather(np.array([value], np.float32)))
    if jax.process_index() == dst:
        return float(gathered.sum())
    return value


def shard_params(full):
    n, i = jax.process_count(), jax.process_index()
    local = full.reshape(n, -1)[i]
    return multihost_utils.host_local_array_to_global_array(local, MESH, P("dp"))


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * g, loss


@jax.jit
def eval_sq_err(w, x, y):
    return jnp.sum((x @ w - y) ** 2)


def local_data(epoch, split):
    pid = jax.process_index()
    rng = np.random.default_rng(7 + 31 * epoch + pid + (100 if split == "val" else 0))
    x = rng.normal(size=(16, DIM)).astype(np.float32)
    y = (x @ np.linspace(-1.0, 1.0, DIM)).astype(np.float32)
    if split == "val" and pid == 0:
        y = y + np.float32(0.9 * epoch)   # this rank's validation shard drifts away each epoch
    return x, y


def to_global(x, y):
    return (multihost_utils.host_local_array_to_global_array(x, MESH, P("dp")),
            multihost_utils.host_local_array_to_global_array(y, MESH, P("dp")))


def save_full_checkpoint(w, epoch):
    full = np.asarray(multihost_utils.process_allgather(w, tiled=True))   # summon full params
    if jax.process_index() == 0:
        os.makedirs(CKPT_DIR, exist_ok=True)
        np.save(os.path.join(CKPT_DIR, f"best_{epoch}.npy"), full)
    return full


def main():
    w = shard_params(np.zeros(DIM, np.float32))
    best_val, saved = float("inf"), []
    for epoch in range(EPOCHS):
        for _ in range(3):
            w, _ = train_step(w, *to_global(*local_data(epoch, "train")))
        xv, yv = local_data(epoch, "val")
        local_err = float(eval_sq_err(np.asarray(multihost_utils.process_allgather(w, tiled=True)), xv, yv))
        val_loss = dist_reduce_sum(local_err) / (16 * jax.process_count())
        if val_loss < best_val:
            best_val = val_loss
            save_full_checkpoint(w, epoch)
            saved.append(epoch)
    final = np.asarray(multihost_utils.process_allgather(w, tiled=True))
    print("RESULT saved_epochs", saved)
    print("RESULT best_val", round(best_val, 4))
    print("RESULT w", np.round(final, 4).tolist())


if __name__ == "__main__":
    main()

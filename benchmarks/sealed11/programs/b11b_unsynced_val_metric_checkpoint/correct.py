# An ASR trainer averages the validation loss over processes (sync_dist) before a best-checkpoint callback act on it
# Source: https://github.com/NVIDIA-NeMo/Speech/pull/10257
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

EPOCHS, STEPS, BATCH, FEAT, LR = 5, 4, 8, 6, 0.03
MESH = jax.make_mesh((jax.device_count(),), ("data",))
CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_unsynced_val_metric_checkpoint",
                        os.environ.get("JOB_ID", "local"))


def shard(a, spec=P("data")):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, spec), np.asarray(a, np.float32))


def utterances(split, epoch, step):
    rng = np.random.default_rng([split, epoch, step, jax.process_index()])
    x = rng.normal(size=(BATCH, FEAT))
    noise = 0.1 if split == 0 else 0.3 + 0.9 * jax.process_index() * (epoch % 2)  # a noisy dev subset on one shard
    return x, x @ np.linspace(-1.0, 1.0, FEAT) + noise * rng.normal(size=BATCH)


@jax.jit
def train_step(w, x, y):
    return w - LR * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


@jax.jit
def per_utt_loss(w, x, y):
    return (x @ w - y) ** 2


def on_validation_epoch_end(w, epoch):
    x, y = utterances(1, epoch, 0)
    losses = per_utt_loss(w, shard(x), shard(y))
    global_mean = jnp.mean(losses)  # mean over every process's utterances
    return float(global_mean)  # logged as val_loss (sync_dist=True)


class BestCheckpoint:
    def __init__(self):
        self.best, self.saved = float("inf"), []

    def on_validation_end(self, val_loss, w, epoch):
        if val_loss >= self.best:
            return
        self.best = val_loss
        params = np.asarray(w)  # replicated: every process holds the full weights
        if jax.process_index() == 0:
            os.makedirs(CKPT_DIR, exist_ok=True)
            np.save(os.path.join(CKPT_DIR, f"best_epoch{epoch}.npy"), params)
        multihost_utils.sync_global_devices(f"checkpoint_epoch{epoch}")
        self.saved.append(epoch)


def main():
    w = shard(np.zeros(FEAT), P())
    ckpt = BestCheckpoint()
    for epoch in range(EPOCHS):
        for step in range(STEPS):
            w = train_step(w, *map(shard, utterances(0, epoch, step)))
        val_loss = on_validation_epoch_end(w, epoch)
        ckpt.on_validation_end(val_loss, w, epoch)
    print("RESULT saved_epochs", ckpt.saved)
    print("RESULT best_val", round(ckpt.best, 4))
    print("RESULT weights", np.round(np.asarray(w), 4).tolist())


main()

# Checkpoint directory name is formatted from each process's own (unreduced) validation loss
# Source: https://github.com/NVIDIA-BioNeMo/bionemo-recipes/pull/786
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
ROWS = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed3_ckname", os.environ.get("JOB_ID", "local"))


@dataclass
class CheckpointConfig:
    dirpath: str
    filename: str = "{epoch}-{val_loss:.2f}-{step}-{consumed_samples}"
    every_n_epochs: int = 1


class ShardedCheckpointCallback:
    def __init__(self, cfg: CheckpointConfig):
        self.cfg = cfg

    def format_name(self, metrics: dict) -> str:
        return self.cfg.filename.format(**metrics)

    def on_validation_end(self, state: dict, metrics: dict) -> str:
        name = self.format_name(metrics)
        path = os.path.join(self.cfg.dirpath, name)
        os.makedirs(path, exist_ok=True)
        for key, arr in state.items():
            for shard in arr.addressable_shards:
                start = shard.index[0].start or 0
                np.save(os.path.join(path, f"{key}.{start}.npy"), np.asarray(shard.data))
        multihost_utils.sync_global_devices(f"commit_checkpoint:{name}")
        return name


@jax.jit
def train_step(state, x, y):
    def loss_fn(emb):
        return jnp.mean((x @ emb.T - y) ** 2)
    g = jax.grad(loss_fn)(state["emb"])
    return {"emb": state["emb"] - 0.01 * g}


def local_val_loss(state, rng) -> float:
    # validation batch of this process only; logged without a cross-process reduction
    emb = np.asarray(multihost_utils.process_allgather(state["emb"], tiled=True))
    x = rng.normal(size=(24, 4)).astype(np.float32)
    y = np.ones((24, emb.shape[0]), np.float32)
    return float(np.mean((x @ emb.T - y) ** 2))


train_rng = np.random.default_rng(7 + jax.process_index())
val_rng = np.random.default_rng(1000 + jax.process_index())
state = {"emb": jax.make_array_from_process_local_data(ROWS, np.full((4, 4), 0.1, np.float32))}
callback = ShardedCheckpointCallback(CheckpointConfig(dirpath=ROOT))
step, consumed, saved = 0, 0, []
for epoch in range(3):
    for _ in range(4):
        x = jax.make_array_from_process_local_data(ROWS, train_rng.normal(size=(8, 4)).astype(np.float32))
        y = jax.make_array_from_process_local_data(ROWS, np.ones((8, 8), np.float32))
        state = train_step(state, x, y)
        step += 1
        consumed += 8 * jax.process_count()
    metrics = {"epoch": epoch, "step": step, "consumed_samples": consumed,
               "val_loss": local_val_loss(state, val_rng)}
    if (epoch + 1) % callback.cfg.every_n_epochs == 0:
        saved.append(callback.on_validation_end(state, metrics))
print("RESULT saved", saved)
print("RESULT emb", round(float(jnp.sum(state["emb"])), 4))

# DeepSpeed-style engine: save_checkpoint always ends in a barrier, but non-ZeRO users save on rank 0 only
# Source: https://github.com/deepspeedai/DeepSpeed/pull/297 (port of a DeepSpeed
# torch.distributed deadlock to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import json
import os
import tempfile
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed8_ds_ckpt", os.environ.get("JOB_ID", "local"))


class DeepSpeedConfig:
    def __init__(self, d: dict):
        self.zero_enabled = d.get("zero_optimization", {}).get("stage", 0) > 0
        self.lr = d.get("optimizer", {}).get("params", {}).get("lr", 0.1)


@partial(jax.jit, static_argnums=2)
def _train_step(w, batch, lr):
    def loss_fn(w):
        return jnp.mean((batch @ w - 1.0) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(w)  # the batch is sharded: the mean is a global reduction
    return w - lr * g, loss


class DeepSpeedEngine:
    def __init__(self, params, config: DeepSpeedConfig):
        self.params, self.config, self.global_steps = params, config, 0

    def zero_optimization(self) -> bool:
        return self.config.zero_enabled

    def train_batch(self, local_batch: np.ndarray):
        batch = multihost_utils.host_local_array_to_global_array(local_batch, MESH, P("data"))
        self.params, loss = _train_step(self.params, batch, self.config.lr)
        self.global_steps += 1
        return float(loss)

    def _save_non_zero_checkpoint(self, save_dir, tag):
        os.makedirs(os.path.join(save_dir, tag), exist_ok=True)
        with open(os.path.join(save_dir, tag, "mp_rank_00_model_states.json"), "w") as f:
            json.dump({"w": np.asarray(self.params).tolist(), "global_steps": self.global_steps}, f)

    def _save_zero_checkpoint(self, save_dir, tag):
        shard = np.asarray(self.params) / jax.process_count()
        with open(os.path.join(save_dir, tag, f"zero_pp_rank_{jax.process_index()}_optim_states.json"), "w") as f:
            json.dump({"shard": shard.tolist()}, f)

    def save_checkpoint(self, save_dir, tag=None):
        tag = tag or f"global_step{self.global_steps}"
        self._save_non_zero_checkpoint(save_dir, tag)
        if self.zero_optimization():
            self._save_zero_checkpoint(save_dir, tag)
        # all ranks wait until the checkpoint is complete
        multihost_utils.sync_global_devices(f"save_checkpoint_{tag}")
        return tag


def main():
    config = DeepSpeedConfig({"optimizer": {"params": {"lr": 0.05}}})  # plain data parallel, no ZeRO
    w = jax.device_put(jnp.full((4,), 0.1, jnp.float32), NamedSharding(MESH, P()))
    engine = DeepSpeedEngine(w, config)
    rng = np.random.default_rng(7 + jax.process_index())
    losses = []
    for step in range(6):
        losses.append(round(engine.train_batch(rng.normal(size=(8, 4)).astype(np.float32)), 5))
        if (step + 1) % 3 == 0 and jax.process_index() == 0:
            # non-ZeRO checkpoints are identical on every rank: the user saves from rank 0 only
            engine.save_checkpoint(CKPT_DIR)
    print(f"RESULT losses {losses}", flush=True)
    print(f"RESULT w {np.round(np.asarray(engine.params), 5).tolist()}", flush=True)


if __name__ == "__main__":
    main()

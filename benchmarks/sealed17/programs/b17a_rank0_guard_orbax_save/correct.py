# Diffusion trainer: every process calls the multi-process checkpoint save; the manager decides who writes metadata
# Source: https://github.com/AI-Hypercomputer/maxdiffusion/commit/386f4952c4cd0ed2dff124fa4badf152bc83fb00
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DIM, STEPS, SAVE_EVERY = 8, 6, 3


class CheckpointManager:
    """Orbax-style manager: every process writes its shards, process 0 writes metadata, then all commit."""

    def __init__(self, directory):
        self.directory = directory

    def save(self, step, state):
        step_dir = self.directory / f"{step}"
        step_dir.mkdir(parents=True, exist_ok=True)
        for name, arr in state.items():
            for shard in arr.addressable_shards:
                np.save(step_dir / f"{name}.shard{shard.device.id}.npy", np.asarray(shard.data))
        norms = {k: float(v) for k, v in zip(state, multihost_utils.process_allgather(
            jnp.stack([jnp.linalg.norm(v) for v in state.values()]), tiled=True))}
        if jax.process_index() == 0:
            (step_dir / "metadata.json").write_text(json.dumps({"step": step, "norms": norms}))
        multihost_utils.sync_global_devices(f"commit_checkpoint_{step}")

    def wait_until_finished(self):
        multihost_utils.sync_global_devices("checkpoint_manager_wait")


@jax.jit
def train_step(unet, text_enc, noise, target):
    def loss_fn(u, t):
        pred = jnp.tanh(noise @ u) + 0.1 * jnp.tanh(noise @ t)
        return jnp.mean((pred - target) ** 2)
    loss, (gu, gt) = jax.value_and_grad(loss_fn, argnums=(0, 1))(unet, text_enc)
    return unet - 0.05 * gu, text_enc - 0.05 * gt, loss


def main():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("fsdp",))
    param_sharding = NamedSharding(mesh, P("fsdp"))
    batch = NamedSharding(mesh, P("fsdp"))
    unet = jax.device_put(jnp.eye(DIM, dtype=jnp.float32) * 0.5, param_sharding)
    text_enc = jax.device_put(jnp.ones((DIM, DIM), jnp.float32) * 0.01, param_sharding)
    out = Path(tempfile.gettempdir()) / "mcjax_sealed17_rank0_guard_orbax_save" / os.environ.get("JOB_ID", "0")
    manager = CheckpointManager(out)
    rng = np.random.default_rng(5 + rank)
    train_states = {}
    for step in range(1, STEPS + 1):
        noise = jax.make_array_from_process_local_data(batch, rng.normal(size=(4, DIM)).astype(np.float32))
        target = jax.make_array_from_process_local_data(batch, np.zeros((4, DIM), np.float32))
        unet, text_enc, loss = train_step(unet, text_enc, noise, target)
        if step % SAVE_EVERY == 0:
            train_states["unet_state"] = unet
            train_states["text_encoder_state"] = text_enc
            manager.save(step, train_states)
            manager.wait_until_finished()
    print("RESULT loss", round(float(loss.addressable_shards[0].data), 5))
    print("RESULT unet_trace", round(float(jnp.trace(unet).addressable_shards[0].data), 5))


if __name__ == "__main__":
    main()

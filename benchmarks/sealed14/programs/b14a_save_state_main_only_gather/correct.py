# Fine-tuning loop with sharded (ZeRO-3 style) weights: every process calls save_state; only the main one writes
# Source: https://github.com/bghira/SimpleTuner/issues/262
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
SHARD = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
ARGS = {"steps": 6, "checkpointing_steps": 2, "lr": 0.1, "width": 8}


class Accelerator:
    def __init__(self, output_dir):
        self.output_dir = output_dir
        self.is_main_process = jax.process_index() == 0

    def save_state(self, tag, state):
        """Consolidates the sharded weights (a collective) and writes them from the main process."""
        full = {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in sorted(state.items())}
        if self.is_main_process:
            path = Path(self.output_dir) / f"checkpoint-{tag}"
            path.mkdir(parents=True, exist_ok=True)
            np.savez(path / "unet.npz", **full)
        return full


@jax.jit
def train_step(state, noise, target):
    def loss_fn(s):
        pred = jnp.tanh(noise * s["unet"] + s["bias"])
        return jnp.mean((pred - target) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(state)
    return jax.tree.map(lambda p, g: p - ARGS["lr"] * g, state, grads), loss


def main():
    out = Path(tempfile.gettempdir()) / "mcjax_sealed14_save_state_main_only" / os.environ.get("JOB_ID", "local")
    accelerator = Accelerator(out)
    w = ARGS["width"]
    state = {"unet": jax.device_put(np.linspace(-1, 1, w).astype(np.float32), SHARD),
             "bias": jax.device_put(np.zeros(w, np.float32), SHARD)}
    rng = np.random.default_rng(jax.process_index())
    losses, saved = [], []
    for global_step in range(1, ARGS["steps"] + 1):
        local = rng.normal(size=(w // jax.process_count(),)).astype(np.float32)
        noise = jax.make_array_from_process_local_data(SHARD, local)
        target = jax.make_array_from_process_local_data(SHARD, np.sin(local))
        state, loss = train_step(state, noise, target)
        losses.append(round(float(loss), 5))
        if global_step % ARGS["checkpointing_steps"] == 0:
            full = accelerator.save_state(global_step, state)     # all processes: consolidation is a collective
            if accelerator.is_main_process:
                saved.append(global_step)
    multihost_utils.sync_global_devices("training finished")
    final = accelerator.save_state("final", state)
    print("RESULT losses", losses)
    print("RESULT final_unet", np.round(final["unet"], 5).tolist())


if __name__ == "__main__":
    main()

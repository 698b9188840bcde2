# InnerEye-style run setup: every process names the run folder from its own timestamp, then shards are written and merged there
# Source: https://github.com/microsoft/InnerEye-DeepLearning/pull/622
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import datetime
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

MODEL_NAME = "segmentation_head"
OUTPUTS_ROOT = Path(tempfile.gettempdir()) / "mcjax_sealed17_timestamp_run_folder_per_rank" / os.environ.get("JOB_ID", "0")


def create_unique_timestamp_id():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%S.%fZ")


def create_run_folder(root, model_name):
    timestamp = create_unique_timestamp_id()
    run_folder = root / f"{timestamp}_{model_name}"
    run_folder.mkdir(parents=True, exist_ok=True)
    return run_folder


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        return jnp.mean((jax.nn.relu(x @ p["w"]) @ p["head"] - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss


def save_sharded(run_folder, step, w):
    """Each process writes the columns of `w` it holds; process 0 merges them after a barrier."""
    ckpt = run_folder / f"step_{step}"
    ckpt.mkdir(exist_ok=True)
    for shard in w.addressable_shards:
        start = shard.index[1].start or 0
        np.save(ckpt / f"w_cols_{start}.npy", np.asarray(shard.data))
    multihost_utils.sync_global_devices(f"shards_written_{step}")
    merged = None
    if jax.process_index() == 0:
        parts = []
        for col in range(0, w.shape[1], w.shape[1] // jax.device_count()):
            parts.append(np.load(ckpt / f"w_cols_{col}.npy"))
        merged = np.concatenate(parts, axis=1)
        np.save(ckpt / "w_full.npy", merged)
    multihost_utils.sync_global_devices(f"checkpoint_done_{step}")
    return ckpt


def main():
    run_folder = create_run_folder(OUTPUTS_ROOT, MODEL_NAME)
    mesh = Mesh(np.array(jax.devices()), ("model",))
    init = np.random.default_rng(0)
    params = {"w": jax.device_put(init.normal(size=(6, 8)).astype(np.float32) * 0.3, NamedSharding(mesh, P(None, "model"))),
              "head": jax.device_put(init.normal(size=(8,)).astype(np.float32) * 0.3, NamedSharding(mesh, P()))}
    data = np.random.default_rng(3)  # same full batch on every process (replicated inputs)
    for step in range(1, 5):
        x = data.normal(size=(16, 6)).astype(np.float32)
        y = np.tanh(x[:, :2].sum(axis=1)).astype(np.float32)
        params, loss = train_step(params, x, y)
        if step % 2 == 0:
            ckpt = save_sharded(run_folder, step, params["w"])
    restored = np.load(ckpt / "w_full.npy")
    print("RESULT final_loss", round(float(loss), 5))
    print("RESULT restored_w_sum", round(float(restored.sum()), 5))
    print("RESULT restored_shape", list(restored.shape))


if __name__ == "__main__":
    main()

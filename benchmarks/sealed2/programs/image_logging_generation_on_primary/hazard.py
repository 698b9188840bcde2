# Reconstructions for image logging are computed with the sharded model inside the process-0 logging block
# Source: https://github.com/p-doom/jasmine/pull/30
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
VIDEOS = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
LOG_IMAGE_INTERVAL = 2
T, H, W = 3, 4, 4


class WandbStub:
    def __init__(self):
        self.logged = []

    def log(self, payload: dict) -> None:
        self.logged.append({k: float(np.mean(v)) for k, v in payload.items()})


@jax.jit
def train_step(params, videos):
    def loss_fn(p):
        recon = jnp.tanh(videos * p["scale"] + p["bias"])
        return jnp.mean((recon - videos) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.2 * g, params, grads), loss


@jax.jit
def reconstruct(params, videos):
    return jnp.tanh(videos * params["scale"] + params["bias"])


def rearrange_to_strip(seq: np.ndarray) -> np.ndarray:
    """'t h w -> h (t w)' for one sequence."""
    return np.concatenate(list(seq), axis=1)


wandb = WandbStub()
params = jax.device_put({"scale": jnp.ones(()), "bias": jnp.zeros(())}, REPL)
rng = np.random.default_rng(jax.process_index())
for step in range(6):
    local = rng.uniform(size=(2, T, H, W)).astype(np.float32)
    videos = jax.make_array_from_process_local_data(VIDEOS, local)
    params, loss = train_step(params, videos)
    if step % LOG_IMAGE_INTERVAL == 0:
        if jax.process_index() == 0:
            recon_seq = reconstruct(params, videos)
            gt_seq = multihost_utils.process_allgather(videos, tiled=True)[0]
            recon_host = multihost_utils.process_allgather(recon_seq, tiled=True)[0]
            comparison_seq = np.concatenate([gt_seq, recon_host], axis=1)
            wandb.log({"image": rearrange_to_strip(comparison_seq * 255), "loss": np.asarray(loss)})

print("RESULT", round(float(loss), 5), round(float(params["scale"]), 5))

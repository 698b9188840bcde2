# Gradient-attribution run saves its sharded Adam second moments; the save (an all-gather, then a rank-0 write) is only called on rank 0
# Source: https://github.com/EleutherAI/bergson/pull/376
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed14_moment_save_rank0_gated_gather", os.environ.get("JOB_ID", "0"))
MESH = Mesh(np.array(jax.devices()), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp"))
DIM, N_BATCHES, BETA2 = 8, 3, 0.95


def per_example_grads(w, x, y):
    return jax.vmap(jax.grad(lambda w, xi, yi: (xi @ w - yi) ** 2), in_axes=(None, 0, 0))(w, x, y)


@jax.jit
def update_moments(w, exp_avg_sq, x, y):
    g = per_example_grads(w, x, y)
    exp_avg_sq = BETA2 * exp_avg_sq + (1 - BETA2) * jnp.mean(g ** 2, axis=0)
    return jax.lax.with_sharding_constraint(exp_avg_sq, SHARDED)


def save_second_moments_as_optimizer_npz(exp_avg_sq, path):
    """Gathers the fsdp-sharded moments (a collective); only rank 0 writes the file."""
    full = multihost_utils.process_allgather(exp_avg_sq, tiled=True)
    if jax.process_index() == 0:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        np.savez(path, exp_avg_sq=np.asarray(full))
    return full


def build_normalizer():
    rank = jax.process_index()
    w = jax.device_put(np.linspace(-1, 1, DIM).astype(np.float32), SHARDED)
    exp_avg_sq = jax.device_put(np.zeros(DIM, np.float32), SHARDED)
    for b in range(N_BATCHES):
        rng = np.random.default_rng(31 * rank + b)
        x = rng.normal(size=(4, DIM)).astype(np.float32)
        y = rng.normal(size=(4,)).astype(np.float32)
        xs = jax.make_array_from_process_local_data(NamedSharding(MESH, P("fsdp", None)), x)
        ys = jax.make_array_from_process_local_data(SHARDED, y)
        exp_avg_sq = update_moments(w, exp_avg_sq, xs, ys)
    return exp_avg_sq


def main():
    exp_avg_sq = build_normalizer()
    path = os.path.join(OUT_DIR, "optimizer.npz")
    if jax.process_index() == 0:
        save_second_moments_as_optimizer_npz(exp_avg_sq, path)
    multihost_utils.sync_global_devices("normalizer saved")
    with np.load(path) as f:
        saved = f["exp_avg_sq"]
    print("RESULT moments_sum", round(float(saved.sum()), 6))
    print("RESULT moments_max", round(float(saved.max()), 6))


if __name__ == "__main__":
    main()

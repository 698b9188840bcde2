# Gradient-norm clipping under FSDP: the total norm is reduced over all gradient shards of all processes
# Source: https://github.com/pytorch/torchtitan/issues/766
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainingConfig:
    dim: int = 4
    hidden: int = 6
    batch_per_process: int = 4
    steps: int = 3
    lr: float = 0.1
    max_norm: float = 0.5


MESH = Mesh(np.array(jax.devices()), ("fsdp",))
FSDP = NamedSharding(MESH, P("fsdp"))


def init_params(cfg):
    rng = np.random.default_rng(3)
    w1 = rng.normal(scale=0.5, size=(cfg.hidden, cfg.dim)).astype(np.float32)
    w2 = rng.normal(scale=0.5, size=(cfg.hidden, 1)).astype(np.float32)
    return {"w1": jax.device_put(w1, FSDP), "w2": jax.device_put(w2, FSDP)}  # rows sharded over ranks


@jax.jit
def loss_and_grads(params, x, y):
    def loss_fn(p):
        h = jnp.tanh(x @ p["w1"].T)
        return jnp.mean(((h @ p["w2"])[:, 0] - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    # FSDP reduce-scatter: each rank keeps the gradient rows of its own parameter shard
    return loss, jax.tree_util.tree_map(lambda g: jax.lax.with_sharding_constraint(g, FSDP), grads)


@jax.jit
def apply_update(params, grads, scale):
    return jax.tree_util.tree_map(lambda p, g: p - scale * g, params, grads)


global_sq_norm = jax.jit(lambda g: jnp.sum(g.astype(jnp.float32) ** 2))


def clip_grad_norm_(grads, max_norm):
    """Returns (total_norm, clip_coef) for the model's gradients."""
    sq = 0.0
    for g in jax.tree_util.tree_leaves(grads):
        sq += float(global_sq_norm(g))              # full (all-shard) squared norm: cross-process reduction
    total_norm = sq ** 0.5
    return total_norm, min(1.0, max_norm / (total_norm + 1e-6))


def batch(cfg, step):
    rng = np.random.default_rng(100 * step + jax.process_index())
    x = rng.normal(size=(cfg.batch_per_process, cfg.dim)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.float32)
    return (jax.make_array_from_process_local_data(FSDP, x), jax.make_array_from_process_local_data(FSDP, y))


def main():
    cfg = TrainingConfig()
    params = init_params(cfg)
    for step in range(cfg.steps):
        x, y = batch(cfg, step)
        loss, grads = loss_and_grads(params, x, y)
        grad_norm, clip_coef = clip_grad_norm_(grads, cfg.max_norm)
        params = apply_update(params, grads, cfg.lr * clip_coef)
        print(f"RESULT step {step} loss {float(loss):.5f} grad_norm {grad_norm:.5f}")
    w1 = np.asarray(multihost_utils.process_allgather(params["w1"], tiled=True))
    print("RESULT w1_sum", f"{w1.sum():.5f}")


if __name__ == "__main__":
    main()

# The shared LoRA adapter is initialised from the expert-parallel RNG, whose seed is offset by the rank
# Source: https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/5396
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class LoraConfig:
    hidden: int = 6
    rank: int = 2
    alpha: float = 4.0
    seed: int = 1234


class RNGTracker:
    """Named RNG streams as in Megatron's CudaRNGStatesTracker: the expert stream is offset per EP rank."""

    def __init__(self, seed):
        ep_rank = jax.process_index()
        self.streams = {"default": np.random.default_rng(seed),
                        "expert-parallel-rng": np.random.default_rng(seed + 2718 + 100 * ep_rank)}

    def fork(self, name):
        return self.streams[name]


def replicate(mesh, local):
    sharding = NamedSharding(mesh, P())
    return jax.make_array_from_callback(local.shape, sharding, lambda idx: local[idx])


def init_shared_expert_lora(cfg, tracker, mesh):
    base = tracker.fork("default").normal(size=(cfg.hidden, cfg.hidden)).astype(np.float32) / cfg.hidden
    rng = tracker.fork("expert-parallel-rng")
    lora_a = (rng.normal(size=(cfg.hidden, cfg.rank)) / np.sqrt(cfg.hidden)).astype(np.float32)
    lora_b = np.zeros((cfg.rank, cfg.hidden), np.float32)
    return {"base": replicate(mesh, base), "lora_a": replicate(mesh, lora_a), "lora_b": replicate(mesh, lora_b)}


def make_train_step(cfg):
    scale = cfg.alpha / cfg.rank

    def loss_fn(lora, base, x, y):
        h = x @ base + scale * (x @ lora["lora_a"]) @ lora["lora_b"]
        return jnp.mean((h - y) ** 2)

    @jax.jit
    def step(params, x, y):
        lora = {"lora_a": params["lora_a"], "lora_b": params["lora_b"]}
        grads = jax.grad(loss_fn)(lora, params["base"], x, y)  # gradients all-reduced over the data axis
        return {**params, **{k: lora[k] - 0.05 * grads[k] for k in lora}}

    return step


def main():
    cfg = LoraConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rows = NamedSharding(mesh, P("data"))
    params = init_shared_expert_lora(cfg, RNGTracker(cfg.seed), mesh)
    step = make_train_step(cfg)
    data_rng = np.random.default_rng(50 + jax.process_index())
    target = np.eye(cfg.hidden, dtype=np.float32)[::-1]
    for _ in range(10):
        x = data_rng.normal(size=(4, cfg.hidden)).astype(np.float32)
        params = step(params, jax.make_array_from_process_local_data(rows, x),
                      jax.make_array_from_process_local_data(rows, x @ target))
    for name in ("lora_a", "lora_b"):
        print("RESULT", name, round(float(np.abs(np.asarray(params[name].addressable_data(0))).sum()), 4))


main()

# Auto-microbatching trainer: a process that runs out of memory halves its microbatch and retries the batch on its own
# Source: https://github.com/mosaicml/composer/pull/1319
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp"))
REPLICATED = NamedSharding(MESH, P())


@dataclass
class TrainerConfig:
    dim: int = 4
    batch_size: int = 4
    steps: int = 3
    lr: float = 0.05
    activation_budget: int = 4096  # bytes of activation memory per device


class DeviceOOM(RuntimeError):
    pass


class FSDPModel:
    def __init__(self, cfg):
        self.cfg = cfg
        self.w = jax.device_put(np.linspace(0.1, 0.4, cfg.dim, dtype=np.float32), SHARDED)
        self._gather = jax.jit(lambda w: w, out_shardings=REPLICATED)
        self._update = jax.jit(lambda w, g: w - cfg.lr * jnp.mean(g, axis=0), out_shardings=SHARDED)

    def gather_params(self):
        return np.asarray(self._gather(self.w))

    def reduce_and_apply(self, local_grad):
        g = jax.make_array_from_process_local_data(SHARDED, local_grad[None, :])
        self.w = self._update(self.w, g)


def microbatch_grad(w, x, y, budget):
    activation_bytes = x.shape[0] * x.shape[1] * x.shape[2] * 4
    if activation_bytes > budget:
        raise DeviceOOM(f"CUDA out of memory: tried to allocate {activation_bytes} bytes")
    h = x.mean(axis=1)
    return h.T @ (h @ w - y) / len(y)


def accumulate(model, x, y, microbatch_size, budget):
    w = model.gather_params()  # FSDP all-gather of the sharded parameters
    grad = np.zeros_like(w)
    for s in range(0, len(x), microbatch_size):
        grad += microbatch_grad(w, x[s:s + microbatch_size], y[s:s + microbatch_size], budget) * (
            len(x[s:s + microbatch_size]) / len(x))
    return grad


def local_batch(step, cfg):
    # packed sequences: this rank's shard of the global batch has longer sequences
    seq_len = {0: 32, 1: 128}[jax.process_index()]
    rng = np.random.default_rng(7 * jax.process_index() + step)
    x = rng.normal(size=(cfg.batch_size, seq_len, cfg.dim)).astype(np.float32)
    return x, x.mean(axis=1).sum(axis=1)


def main():
    cfg = TrainerConfig()
    model = FSDPModel(cfg)
    microbatch_size = cfg.batch_size
    for step in range(cfg.steps):
        x, y = local_batch(step, cfg)
        while True:
            try:
                grad = accumulate(model, x, y, microbatch_size, cfg.activation_budget)
                break
            except DeviceOOM:
                microbatch_size = max(1, microbatch_size // 2)
        model.reduce_and_apply(grad)
    sizes = np.asarray(multihost_utils.process_allgather(np.int32(microbatch_size))).reshape(-1)
    print("RESULT weights", np.round(model.gather_params(), 5).tolist())
    print("RESULT microbatch_sizes", sizes.tolist())


if __name__ == "__main__":
    main()

# Megatron-FSDP-style data-parallel training: per-module gradient buckets reduce-scattered, params all-gathered
# Source: https://github.com/NVIDIA/Megatron-LM/pull/2218
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MODULE_SHAPES = {
    "embedding": (16, 4),
    "decoder.layers.0.self_attention": (4, 12),
    "decoder.layers.0.mlp": (4, 6),
    "decoder.layers.1.self_attention": (4, 10),
    "decoder.layers.1.mlp": (4, 8),
    "decoder.final_layernorm": (4,),
    "output_layer": (4, 3),
}


class ParamAndGradBuffer:
    """One flat bucket per module; each DP rank owns a contiguous shard of every bucket."""

    def __init__(self, params, dp_rank, dp_size):
        self.params, self.dp_rank, self.dp_size = params, dp_rank, dp_size
        self.main_grads = {}
        self._grad_reduce_pending = {}

    def _shard_bounds(self, numel):
        per_rank = -(-numel // self.dp_size)
        return per_rank * self.dp_rank, min(per_rank * (self.dp_rank + 1), numel), per_rank

    def register_grad_ready(self, name, grad):
        self.main_grads[name] = np.asarray(grad).reshape(-1)
        self._grad_reduce_pending[name] = None

    def _reduce_scatter_bucket(self, name):
        flat = self.main_grads[name]
        _, _, per_rank = self._shard_bounds(flat.size)
        padded = np.zeros(per_rank * self.dp_size, flat.dtype)
        padded[:flat.size] = flat
        summed = np.asarray(multihost_utils.process_allgather(padded)).sum(axis=0) / self.dp_size
        return summed[per_rank * self.dp_rank:per_rank * (self.dp_rank + 1)]

    def finish_grad_sync_and_step(self, lr):
        for name in self._grad_reduce_pending:
            shard_grad = self._reduce_scatter_bucket(name)
            flat_param = np.asarray(self.params[name]).reshape(-1)
            start, end, per_rank = self._shard_bounds(flat_param.size)
            shard = np.zeros(per_rank, flat_param.dtype)
            shard[:end - start] = flat_param[start:end] - lr * shard_grad[:end - start]
            full = np.asarray(multihost_utils.process_allgather(shard)).reshape(-1)[:flat_param.size]
            self.params[name] = full.reshape(self.params[name].shape)
        self._grad_reduce_pending.clear()


def forward(params, tokens, targets):
    h = params["embedding"][tokens]
    for i in range(2):
        attn = jnp.tanh(h @ params[f"decoder.layers.{i}.self_attention"])[:, :4]
        h = h + attn + jnp.tanh(h @ params[f"decoder.layers.{i}.mlp"])[:, :4]
    h = h * params["decoder.final_layernorm"]
    logits = h @ params["output_layer"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), targets[:, None], axis=1))


def main():
    rank, world = jax.process_index(), jax.process_count()
    key = jax.random.PRNGKey(42)
    params = {}
    for name, shape in MODULE_SHAPES.items():
        key, sub = jax.random.split(key)
        params[name] = np.asarray(jax.random.normal(sub, shape) * 0.3) if len(shape) > 1 else np.ones(shape, np.float32)
    buffer = ParamAndGradBuffer(params, rank, world)
    grad_fn = jax.jit(jax.value_and_grad(forward))
    rng = np.random.default_rng(7 + rank)
    for step in range(3):
        tokens = rng.integers(0, 16, size=8)
        targets = (tokens % 3).astype(np.int32)
        loss, grads = grad_fn(buffer.params, tokens, targets)
        for name in reversed(list(MODULE_SHAPES)):
            buffer.register_grad_ready(name, grads[name])
        buffer.finish_grad_sync_and_step(lr=0.1)
    checksum = sum(float(np.abs(v).sum()) for v in buffer.params.values())
    print("RESULT steps", 3)
    print("RESULT param_checksum", round(checksum, 4))


if __name__ == "__main__":
    main()

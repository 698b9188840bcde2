import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PARAM_SPECS = [
    ("embed.weight", (8, 4), False),
    ("layers.0.attn.q_proj.weight", (4, 4), False),
    ("layers.0.attn.q_proj.lora_A", (4, 2), True),
    ("layers.0.attn.q_proj.lora_B", (2, 4), True),
    ("layers.0.mlp.weight", (4, 4), False),
    ("lm_head.weight", (4, 3), False),
]


def init_params(seed=0):
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape, _ in PARAM_SPECS:
        scale = 0.0 if name.endswith("lora_B") else 0.4
        params[name] = (scale * rng.normal(size=shape)).astype(np.float32)
    return params


def shard_param_names(rank, world):
    sizes = [int(np.prod(shape)) for _, shape, _ in PARAM_SPECS]
    total, owned, acc = sum(sizes), [], 0
    for (name, _, _), size in zip(PARAM_SPECS, sizes):
        if acc * world // total == rank:
            owned.append(name)
        acc += size
    return owned


def forward(trainable, frozen, x):
    p = {**frozen, **trainable}
    h = x @ p["embed.weight"]
    h = h @ (p["layers.0.attn.q_proj.weight"] + p["layers.0.attn.q_proj.lora_A"] @ p["layers.0.attn.q_proj.lora_B"])
    h = jax.nn.gelu(h @ p["layers.0.mlp.weight"]) + h
    return h @ p["lm_head.weight"]


def loss_fn(trainable, frozen, x, y):
    return jnp.mean((forward(trainable, frozen, x) - y) ** 2)


def get_grad_norm_fp32(grads_for_norm, norm_type=2.0):
    if not grads_for_norm:
        return 0.0
    local = sum(float(jnp.sum(jnp.abs(g) ** norm_type)) for g in grads_for_norm)
    total = np.asarray(multihost_utils.process_allgather(np.float32(local))).sum()
    return float(total) ** (1.0 / norm_type)


class ArchonLoRAEngine:
    def __init__(self, params, lr=0.2, max_grad_norm=0.5):
        self.rank, self.world = jax.process_index(), jax.process_count()
        self.trainable_names = [n for n, _, t in PARAM_SPECS if t]
        self.owned = shard_param_names(self.rank, self.world)
        self.params = params
        self.lr, self.max_grad_norm = lr, max_grad_norm
        self._grad = jax.jit(jax.value_and_grad(loss_fn))

    def _unshard(self):
        sizes = {n: self.params[n].size for n in self.params}
        pad = max(sum(sizes[n] for n in shard_param_names(r, self.world)) for r in range(self.world))
        local = np.zeros(pad, np.float32)
        flat = np.concatenate([self.params[n].ravel() for n in self.owned]) if self.owned else np.zeros(0)
        local[: flat.size] = flat
        gathered = np.asarray(multihost_utils.process_allgather(local))
        for r in range(self.world):
            off = 0
            for n in shard_param_names(r, self.world):
                self.params[n] = gathered[r, off: off + sizes[n]].reshape(self.params[n].shape)
                off += sizes[n]

    def train_batch(self, x, y):
        trainable = {n: self.params[n] for n in self.trainable_names}
        frozen = {n: v for n, v in self.params.items() if n not in trainable}
        loss, grads = self._grad(trainable, frozen, x, y)
        grads = {n: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for n, g in grads.items()}
        local_grads = {n: g for n, g in grads.items() if n in self.owned}
        grad_norm = get_grad_norm_fp32(list(local_grads.values()))
        clip = min(1.0, self.max_grad_norm / (grad_norm + 1e-6))
        for n, g in local_grads.items():
            self.params[n] = self.params[n] - self.lr * clip * g
        self._unshard()
        return float(loss), grad_norm


def main():
    rank = jax.process_index()
    engine = ArchonLoRAEngine(init_params())
    print(f"rank {rank} owns {engine.owned}")
    rng = np.random.default_rng(100 + rank)
    target = np.random.default_rng(5).normal(size=(8, 3)).astype(np.float32)
    norms = []
    for step in range(6):
        x = rng.normal(size=(16, 8)).astype(np.float32)
        loss, grad_norm = engine.train_batch(x, np.tanh(x @ target))
        norms.append(grad_norm)
        print(f"rank {rank} step {step} loss {loss:.4f} grad_norm {grad_norm:.4f}")
    b = np.asarray(multihost_utils.process_allgather(engine.params["layers.0.attn.q_proj.lora_B"]))
    print("RESULT grad_norms", [round(v, 4) for v in norms])
    print("RESULT lora_B_sum", round(float(b[0].sum()), 4))
    print("RESULT replicas_in_sync", bool(np.allclose(b, b[0])), math.isfinite(norms[-1]))


if __name__ == "__main__":
    main()

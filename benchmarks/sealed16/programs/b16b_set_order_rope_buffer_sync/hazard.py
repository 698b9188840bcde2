# Hybrid-attention LM under DDP-style replication: RoPE buffers are registered in list(set(layer_types)) order, then synced from process 0 by index
# Source: https://github.com/huggingface/transformers/pull/48162
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROPE_BASE = {"sliding_128": 10.0, "sliding_256": 40.0, "sliding_512": 160.0, "sliding_1024": 640.0,
             "chunked_4096": 2560.0, "chunked_8192": 1.0e4, "global_nope": 4.0e4, "full_attention": 1.0e6}


@dataclass
class HybridConfig:
    vocab: int = 16
    dim: int = 8
    layer_types: list = field(default_factory=lambda: list(ROPE_BASE))


class HybridLM:
    def __init__(self, cfg):
        self.cfg = cfg
        rng = np.random.default_rng(0)
        self.params = {"embed": rng.normal(size=(cfg.vocab, cfg.dim)).astype(np.float32) * 0.5,
                       "wq": rng.normal(size=(len(cfg.layer_types), cfg.dim, cfg.dim)).astype(np.float32) * 0.4}
        self.buffers = {}
        for lt in list(set(cfg.layer_types)):          # one rotary buffer per distinct layer type
            half = np.arange(0, cfg.dim, 2, dtype=np.float32) / cfg.dim
            self.buffers[f"rotary_emb.{lt}.inv_freq"] = (1.0 / ROPE_BASE[lt] ** half).astype(np.float32)

    def named_buffers(self):
        return list(self.buffers.items())

    def inv_freqs(self):
        return np.stack([self.buffers[f"rotary_emb.{lt}.inv_freq"] for lt in self.cfg.layer_types])


def sync_module_states(model):
    """DDP's _sync_module_states: broadcast process 0's parameters and buffers, matched by position."""
    names = [n for n, _ in model.named_buffers()]
    bufs = multihost_utils.broadcast_one_to_all([b for _, b in model.named_buffers()])
    for name, b in zip(names, bufs):
        model.buffers[name] = np.asarray(b)
    model.params = {k: np.asarray(v) for k, v in multihost_utils.broadcast_one_to_all(model.params).items()}


def rope(x, pos, inv_freq):
    ang = pos[:, None] * inv_freq[None, :]
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return jnp.concatenate([x1 * jnp.cos(ang) - x2 * jnp.sin(ang), x1 * jnp.sin(ang) + x2 * jnp.cos(ang)], -1)


def logits_fn(params, inv_freqs, tokens):
    h = params["embed"][tokens]
    pos = jnp.arange(tokens.shape[-1], dtype=jnp.float32)
    for layer in range(inv_freqs.shape[0]):
        q = rope(h @ params["wq"][layer], pos, inv_freqs[layer])
        k = rope(h, pos, inv_freqs[layer])
        att = jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / np.sqrt(h.shape[-1]), axis=-1)
        h = h + 0.5 * att @ h
    return h @ params["embed"].T


@jax.jit
def train_step(params, inv_freqs, tokens):
    def loss_fn(p):
        logp = jax.nn.log_softmax(jax.vmap(lambda t: logits_fn(p, inv_freqs, t))(tokens[:, :-1]), -1)
        return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], -1))
    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda a, b: a - 0.1 * b, params, g), loss


def greedy_generate(model, prompt, steps=6):
    toks = list(prompt)
    logit_sum = 0.0
    for _ in range(steps):
        logits = np.asarray(logits_fn(model.params, model.inv_freqs(), jnp.array(toks)))[-1]
        logit_sum += float(logits.max())
        toks.append(int(logits.argmax()))
    return toks[len(prompt):], logit_sum


def main():
    cfg = HybridConfig()
    model = HybridLM(cfg)
    sync_module_states(model)
    for step in range(3):
        rng = np.random.default_rng(step * 7 + jax.process_index())
        local = rng.integers(0, cfg.vocab, size=(2, 6)).astype(np.int32)
        tokens = multihost_utils.host_local_array_to_global_array(local, MESH, P("dp"))
        params, loss = train_step(model.params, model.inv_freqs(), tokens)
        model.params = {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in params.items()}
    completion, logit_sum = greedy_generate(model, [1, 5, 3])   # every rank generates its own rollouts
    print("RESULT completion", completion)
    print("RESULT logit_checksum", round(logit_sum, 3))


if __name__ == "__main__":
    main()

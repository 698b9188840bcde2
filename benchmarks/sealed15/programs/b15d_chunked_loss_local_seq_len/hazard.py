# GRPO learn step with a chunked token-level loss over ZeRO-sharded lm_head: the chunk count follows this rank's own completion length
# Source: https://github.com/AgileRL/AgileRL/pull/586
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import math
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
SHARDED_W = NamedSharding(MESH, P(None, "dp"))     # ZeRO-3 style: lm_head partitioned over ranks
RANK = jax.process_index()


@dataclass
class LossConfig:
    hidden: int = 8
    vocab: int = 16
    group_size: int = 2
    chunk_tokens: int = 4
    importance_sampling_level: str = "token"


def completion_batch(cfg):
    """Rollouts of this rank: completions end at different lengths on different ranks."""
    rng = np.random.default_rng(40 + RANK)
    lengths = [3, 5] if RANK == 0 else [9, 6]
    t_max = max(lengths)
    hidden = rng.normal(size=(cfg.group_size, t_max, cfg.hidden)).astype(np.float32)
    targets = rng.integers(0, cfg.vocab, size=(cfg.group_size, t_max)).astype(np.int32)
    mask = (np.arange(t_max)[None, :] < np.array(lengths)[:, None]).astype(np.float32)
    adv = np.array([1.0, -1.0], np.float32) * (1 + RANK)
    return hidden, targets, mask, adv


def pad_to(x, t, value=0):
    pad = [(0, 0)] * x.ndim
    pad[1] = (0, t - x.shape[1])
    return np.pad(x, pad, constant_values=value)


@jax.jit
def chunk_loss(w, h, tgt, m, adv):
    logits = h @ w                                        # all-gathers the partitioned lm_head
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits, -1), tgt[..., None], -1)[..., 0]
    ratio = jnp.exp(logp - jax.lax.stop_gradient(logp))
    return -jnp.sum(ratio * adv[:, None] * m), jnp.sum(m)


def learn(w, cfg):
    hidden, targets, mask, adv = completion_batch(cfg)
    t = hidden.shape[1]
    n_chunks = math.ceil(t / cfg.chunk_tokens)
    t_pad = n_chunks * cfg.chunk_tokens
    hidden, targets, mask = pad_to(hidden, t_pad), pad_to(targets, t_pad), pad_to(mask, t_pad)
    total, count = 0.0, 0.0
    for c in range(n_chunks):
        s = slice(c * cfg.chunk_tokens, (c + 1) * cfg.chunk_tokens)
        l, n = chunk_loss(w, jax.make_array_from_process_local_data(ROWS, hidden[:, s]),
                          jax.make_array_from_process_local_data(ROWS, targets[:, s]),
                          jax.make_array_from_process_local_data(ROWS, mask[:, s]),
                          jax.make_array_from_process_local_data(ROWS, adv))
        total, count = total + float(l), count + float(n)
    return total / count, n_chunks


def main():
    cfg = LossConfig()
    w = np.random.default_rng(0).normal(scale=0.5, size=(cfg.hidden, cfg.vocab)).astype(np.float32)
    w = jax.device_put(w, SHARDED_W)
    loss, n_chunks = learn(w, cfg)
    print("RESULT chunks", n_chunks)
    print("RESULT loss", round(loss, 5))


if __name__ == "__main__":
    main()

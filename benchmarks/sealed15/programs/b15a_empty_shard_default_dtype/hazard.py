# Hard-example mining across hosts: a host with no hard examples builds its padded buffer with numpy's default dtype
# Source: https://github.com/helmholtz-analytics/heat/commit/87ef6ffbc40136b9ac37c7e0a72302dae717070a
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PAD_ID = -1


@dataclass
class MiningConfig:
    seq_len: int = 6
    rows_per_host: int = 4
    capacity: int = 3              # hard examples kept per host
    loss_threshold: float = 2.0
    vocab: int = 50


def host_batch(cfg, rank):
    rng = np.random.default_rng(300 + rank)
    tokens = rng.integers(0, cfg.vocab, size=(cfg.rows_per_host, cfg.seq_len)).astype(np.int32)
    scale = 3.0 if rank == 0 else 0.5                    # host 1 holds an easy shard
    return tokens, scale


@jax.jit
def per_example_loss(emb, tokens, scale):
    h = emb[tokens].mean(axis=1)
    return scale * jnp.sum(h * h, axis=-1)


def pad_to_capacity(rows, cfg):
    if len(rows) == 0:
        block = np.empty((0, cfg.seq_len))                          # no hard examples on this host
    else:
        block = np.stack(rows)[: cfg.capacity]
    fill = np.full((cfg.capacity - len(block), cfg.seq_len), PAD_ID, dtype=np.int32)
    return np.concatenate([block, fill])


def main():
    cfg = MiningConfig()
    rank = jax.process_index()
    emb = jnp.asarray(np.random.default_rng(0).normal(size=(cfg.vocab, 8)), jnp.float32)   # host-local table
    tokens, scale = host_batch(cfg, rank)
    losses = np.asarray(per_example_loss(emb, tokens, scale))
    hard = [t for t, l in zip(tokens, losses) if l > cfg.loss_threshold]
    padded = pad_to_capacity(hard, cfg)
    gathered = np.asarray(multihost_utils.process_allgather(padded))          # (num_hosts, capacity, seq_len)
    replay = gathered.reshape(-1, cfg.seq_len)
    keep = replay[(replay != PAD_ID).all(axis=1)]
    print("RESULT hard_examples", len(keep))
    print("RESULT replay_checksum", int(np.asarray(keep, np.int64).sum()))


if __name__ == "__main__":
    main()

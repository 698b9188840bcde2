# GRPO-style RL loop: each host batches its own prompt shard with drop_remainder, so every step has the same shape on all hosts
# Source: https://github.com/AI-Hypercomputer/maxtext/commit/c926b9956be160d8a76f42a2458e297c18981c1e
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainerConfig:
    batch_size: int = 4            # per-host prompts per step
    num_prompts: int = 21          # prompts in the training split
    seq_len: int = 6
    num_epoch: int = 1
    learning_rate: float = 0.05


def load_prompts(cfg, rank, nproc):
    """Every host reads the same split and keeps its own strided slice (the per-host data loading)."""
    rng = np.random.default_rng(7)
    feats = rng.normal(size=(cfg.num_prompts, cfg.seq_len)).astype(np.float32)
    rewards = (feats.sum(axis=1) > 0).astype(np.float32)
    idx = np.arange(rank, cfg.num_prompts, nproc)
    return feats[idx], rewards[idx]


def batch_iter(feats, rewards, batch_size, drop_remainder):
    n = len(feats)
    for start in range(0, n, batch_size):
        stop = start + batch_size
        if stop > n and drop_remainder:
            return
        yield feats[start:stop], rewards[start:stop]


def prepare_datasets(cfg, rank, nproc):
    feats, rewards = load_prompts(cfg, rank, nproc)
    for _ in range(cfg.num_epoch):
        yield from batch_iter(feats, rewards, cfg.batch_size, drop_remainder=True)


def grpo_loss(w, x, r):
    logits = x @ w
    logp = jax.nn.log_sigmoid(logits)
    adv = r - jnp.mean(r)                      # group-relative advantage over the global batch
    return -jnp.mean(adv * logp)


@jax.jit
def train_step(w, x, r):
    loss, g = jax.value_and_grad(grpo_loss)(w, x, r)
    return w - 0.05 * g, loss


def to_global(mesh, local):
    sharding = NamedSharding(mesh, P("data"))
    return jax.make_array_from_process_local_data(sharding, local)


def main():
    cfg = TrainerConfig()
    rank, nproc = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    w = jax.device_put(jnp.zeros((cfg.seq_len,), jnp.float32), NamedSharding(mesh, P()))
    losses = []
    for step, (x, r) in enumerate(prepare_datasets(cfg, rank, nproc)):
        gx, gr = to_global(mesh, x), to_global(mesh, r)
        w, loss = train_step(w, gx, gr)
        losses.append(round(float(loss), 5))
    w_host = np.asarray(jax.device_get(w))
    print("RESULT steps", len(losses))
    print("RESULT losses", losses)
    print("RESULT w", np.round(w_host, 5).tolist())


if __name__ == "__main__":
    main()

# Data-parallel training of a small click-through model; every worker reads its share of the
# dataset partitions (as merlin's Loader does with global_rank / global_size) and the gradients
# are averaged across workers each step.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import jax.flatten_util
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Config:
    file_rows: tuple = (225, 150)
    part_rows: int = 50
    batch_size: int = 16
    num_items: int = 40
    emb_dim: int = 8
    epochs: int = 2
    lr: float = 0.5


def read_files(cfg):
    rng = np.random.default_rng(7)
    files = []
    for rows in cfg.file_rows:
        user = rng.integers(0, cfg.num_items, size=rows)
        item = rng.integers(0, cfg.num_items, size=rows)
        click = ((user + item) % 3 == 0).astype(np.float32)
        files.append((np.stack([user, item], axis=1).astype(np.int32), click))
    return files


def to_partitions(files, part_rows):
    parts = []
    for feats, labels in files:
        for start in range(0, len(labels), part_rows):
            parts.append((feats[start:start + part_rows], labels[start:start + part_rows]))
    return parts


class Loader:
    def __init__(self, parts, batch_size, global_rank, global_size):
        self.parts = parts[global_rank::global_size]
        self.batch_size = batch_size

    def __iter__(self):
        for feats, labels in self.parts:
            for start in range(0, len(labels), self.batch_size):
                yield feats[start:start + self.batch_size], labels[start:start + self.batch_size]


def split_evenly(parts, global_rank, global_size):
    feats = np.concatenate([f for f, _ in parts])
    labels = np.concatenate([l for _, l in parts])
    per_worker = len(labels) // global_size
    shard = slice(global_rank * per_worker, (global_rank + 1) * per_worker)
    return [(feats[shard], labels[shard])]


def init_params(key, cfg):
    k1, k2 = jax.random.split(key)
    return {"user": jax.random.normal(k1, (cfg.num_items, cfg.emb_dim)) * 0.1,
            "item": jax.random.normal(k2, (cfg.num_items, cfg.emb_dim)) * 0.1,
            "bias": jnp.zeros(())}


def loss_fn(params, feats, labels):
    logits = jnp.sum(params["user"][feats[:, 0]] * params["item"][feats[:, 1]], axis=1) + params["bias"]
    return jnp.mean(jnp.logaddexp(0.0, logits) - labels * logits)


grad_fn = jax.jit(jax.value_and_grad(loss_fn))


def allreduce_mean(tree):
    flat, unravel = jax.flatten_util.ravel_pytree(tree)
    return unravel(jnp.asarray(np.asarray(multihost_utils.process_allgather(np.asarray(flat))).mean(axis=0)))


def main():
    cfg = Config()
    rank, size = jax.process_index(), jax.process_count()
    parts = to_partitions(read_files(cfg), cfg.part_rows)
    loader = Loader(split_evenly(parts, rank, size), cfg.batch_size, global_rank=0, global_size=1)
    params = init_params(jax.random.PRNGKey(0), cfg)

    for epoch in range(cfg.epochs):
        losses = []
        for feats, labels in loader:
            loss, grads = grad_fn(params, feats, labels)
            grads = allreduce_mean(grads)
            params = jax.tree_util.tree_map(lambda p, g: p - cfg.lr * g, params, grads)
            losses.append(float(loss))
        epoch_loss = np.asarray(multihost_utils.process_allgather(np.float32(np.mean(losses)))).mean()
        if rank == 0:
            print(f"epoch {epoch}: steps={len(losses)} loss={epoch_loss:.4f}")

    print("RESULT final_epoch_loss", round(float(epoch_loss), 4))
    print("RESULT params_checksum", round(float(sum(jnp.sum(jnp.abs(p)) for p in jax.tree_util.tree_leaves(params))), 4))


if __name__ == "__main__":
    main()

# Policy training on a frame dataset: train/val split drawn from a dedicated generator seeded with cfg.seed
# Source: https://github.com/TensorAuto/OpenTau/pull/498
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import hashlib
import os
import random
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainConfig:
    seed: int = 1234
    num_frames: int = 400
    obs_dim: int = 6
    act_dim: int = 2
    val_split_ratio: float = 0.1
    batch_size: int = 16
    steps: int = 30
    lr: float = 0.05


def set_seed(seed, process_index=None):
    # per-process offset so that augmentation draws are decorrelated across ranks
    if process_index is not None:
        seed += process_index * 12345
    random.seed(seed)
    np.random.seed(seed)


class FrameDataset:
    def __init__(self, cfg):
        rng = np.random.default_rng(2024)
        self.obs = rng.normal(loc=1.5, scale=2.0, size=(cfg.num_frames, cfg.obs_dim)).astype(np.float32)
        proj = rng.normal(size=(cfg.obs_dim, cfg.act_dim)).astype(np.float32)
        self.action = np.tanh(self.obs @ proj * 0.3).astype(np.float32)

    def __len__(self):
        return len(self.obs)


def random_split(n, lengths, generator):
    perm = generator.permutation(n)
    return perm[:lengths[0]], perm[lengths[0]:]


def make_dataset(cfg):
    dataset = FrameDataset(cfg)
    val_size = int(len(dataset) * cfg.val_split_ratio)
    generator = np.random.default_rng(cfg.seed)
    val_idx, train_idx = random_split(len(dataset), [val_size, len(dataset) - val_size], generator)
    return dataset, np.sort(train_idx), np.sort(val_idx)


def compute_stats(dataset, indices):
    obs = dataset.obs[indices]
    return {"mean": obs.mean(axis=0), "std": obs.std(axis=0) + 1e-6}


def policy_loss(params, stats, obs, action):
    x = (obs - stats["mean"]) / stats["std"]
    pred = jnp.tanh(x @ params["w1"]) @ params["w2"]
    return jnp.mean((pred - action) ** 2)


grad_fn = jax.jit(jax.value_and_grad(policy_loss))


def all_mean(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x, dtype=np.float32))).mean(axis=0)


def main():
    cfg = TrainConfig()
    rank, world = jax.process_index(), jax.process_count()
    set_seed(cfg.seed, process_index=rank)
    dataset, train_idx, val_idx = make_dataset(cfg)
    stats = compute_stats(dataset, train_idx)

    key = jax.random.PRNGKey(cfg.seed)
    k1, k2 = jax.random.split(key)
    params = {"w1": 0.3 * jax.random.normal(k1, (cfg.obs_dim, 16)), "w2": 0.3 * jax.random.normal(k2, (16, cfg.act_dim))}

    shard = train_idx[rank::world]
    for step in range(cfg.steps):
        batch = np.random.choice(shard, cfg.batch_size, replace=False)
        loss, grads = grad_fn(params, stats, dataset.obs[batch], dataset.action[batch])
        grads = {k: all_mean(g) for k, g in grads.items()}
        params = {k: params[k] - cfg.lr * grads[k] for k in params}

    val_shard = val_idx[rank::world]
    val_loss = float(all_mean(policy_loss(params, stats, dataset.obs[val_shard], dataset.action[val_shard])))
    split_digest = hashlib.sha1(val_idx.tobytes()).hexdigest()[:12]
    state = {**params, "stats_mean": stats["mean"], "stats_std": stats["std"]}
    checksum = float(sum(np.abs(np.asarray(v)).sum() for v in state.values()))
    print("RESULT val_frames", len(val_idx), split_digest)
    print("RESULT val_loss", round(val_loss, 4))
    print("RESULT policy_state_checksum", round(checksum, 3))


if __name__ == "__main__":
    main()

# CLIP-style eval score and FID statistics are gathered across hosts before they are reported
# Source: https://github.com/AI-Hypercomputer/maxdiffusion/pull/46
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
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
class EvalConfig:
    num_prompts: int = 16
    image_dim: int = 8
    feature_dim: int = 4
    seed: int = 0


def load_prompts(config):
    """Every host reads the whole prompt file; the pipeline keeps this host's share of it."""
    rng = np.random.default_rng(config.seed)
    all_prompts = rng.normal(size=(config.num_prompts, config.image_dim)).astype(np.float32)
    per_host = config.num_prompts // jax.process_count()
    start = jax.process_index() * per_host
    return all_prompts[start:start + per_host]


def generate_images(prompts, mesh):
    batch = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), prompts)

    @jax.jit
    def denoise(x):
        for _ in range(3):
            x = jnp.tanh(x * 1.5 + 0.1)
        return x

    images = denoise(batch)
    # each host saves and scores the images that landed on its own devices
    return np.concatenate([np.asarray(s.data) for s in images.addressable_shards])


def calculate_clip(images, prompts):
    sims = np.sum(images * prompts, axis=1) / (
        np.linalg.norm(images, axis=1) * np.linalg.norm(prompts, axis=1))
    return float(np.mean(sims) * 100.0)


def compute_statistics(images, config):
    proj = np.random.default_rng(config.seed + 1).normal(size=(config.image_dim, config.feature_dim))
    acts = images @ proj
    return acts.mean(axis=0), np.cov(acts, rowvar=False)


def eval_scores(config):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    prompts = load_prompts(config)
    images = generate_images(prompts, mesh)

    clip_score = calculate_clip(images, prompts)
    clip_score = multihost_utils.process_allgather(np.float32(clip_score))
    clip_score = float(np.mean(clip_score))
    all_images = multihost_utils.process_allgather(images, tiled=True)
    all_prompts = multihost_utils.process_allgather(prompts, tiled=True)
    mu1, sigma1 = compute_statistics(all_images, config)
    mu2, sigma2 = compute_statistics(np.tanh(all_prompts), config)
    fid = float(np.sum((mu1 - mu2) ** 2) + np.trace(sigma1 + sigma2 - 2.0 * np.sqrt(np.abs(sigma1 * sigma2))))
    return clip_score, fid


clip, fid = eval_scores(EvalConfig())
print("RESULT clip_score", round(clip, 4))
print("RESULT fid", round(fid, 4))
multihost_utils.sync_global_devices("eval_done")

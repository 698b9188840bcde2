# A diffusion fine-tuner splits aspect buckets across ranks, caches VAE latents and refills slots of filtered samples
# Source: https://github.com/bghira/SimpleTuner/pull/2987
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PIXELS, LATENT, LR = 12, 4, 0.05
BUCKETS = {"1.0": [f"image-{i}.jpg" for i in range(5)], "1.5": [f"image-{i}.jpg" for i in range(5, 9)]}
NSFW_FLAGGED = {"image-4.jpg"}  # the metadata scan rejects this one
MESH = Mesh(np.array(jax.devices()), ("data",))


def split_buckets_between_processes(buckets, rank, world):
    """Pad each bucket (repeating its last item) to a multiple of world, then take this rank's contiguous part."""
    shards = {}
    for key, paths in sorted(buckets.items()):
        paths = list(paths)
        while len(paths) % world:
            paths.append(paths[-1])
        per = len(paths) // world
        shards[key] = paths[rank * per:(rank + 1) * per]
    return shards


def load_pixels(path):
    rng = np.random.default_rng(int(path.split("-")[1].split(".")[0]))
    return rng.normal(size=(PIXELS,)).astype(np.float32)


@jax.jit
def vae_encode(enc, pixels):
    return jnp.tanh(pixels @ enc)


def handle_filtered_sample(shard, path):
    """Drop every occurrence of a rejected path, refilling the slots with the bucket's last surviving sample."""
    kept = [p for p in shard if p != path]
    vacated = len(shard) - len(kept)
    if kept and vacated:
        kept += [kept[-1]] * vacated
    return kept


def cache_latents(shards, enc):
    cache = {}
    for key in sorted(shards):
        for path in list(shards[key]):
            if path in NSFW_FLAGGED:
                shards[key] = handle_filtered_sample(shards[key], path)
                continue
            cache[path] = np.asarray(vae_encode(enc, load_pixels(path)))
    return cache


def shard(a):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("data")), a)


@jax.jit
def train_step(w, latents, targets):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((latents @ w - targets) ** 2))(w)
    return w - LR * g, loss


def main():
    rank, world = jax.process_index(), jax.process_count()
    enc = jnp.asarray(np.random.default_rng(0).normal(0, 0.3, (PIXELS, LATENT)).astype(np.float32))
    shards = split_buckets_between_processes(BUCKETS, rank, world)
    cache = cache_latents(shards, enc)
    w = jnp.zeros((LATENT, 1), jnp.float32)
    steps, loss = 0, None
    for key in sorted(shards):
        for path in shards[key]:  # local batch size 1 per rank, one bucket at a time
            lat = cache[path][None]
            w, loss = train_step(w, shard(lat), shard(lat[:, :1] * 0.5))
            steps += 1
    print("RESULT steps", steps)
    print("RESULT loss", round(float(loss), 6))
    print("RESULT w", np.round(np.asarray(w).ravel(), 5).tolist())


main()

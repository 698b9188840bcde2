# A multi-system potential trainer derives num_steps from numb_epoch and sampler weights on every rank
# Source: https://github.com/deepmodeling/deepmd-kit/pull/5570
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SYSTEMS = [("water_64", 10, 3), ("ice_96", 9, 4), ("slab_128", 10, 5)]  # (name, nframes, batch_size)
NUMB_EPOCH, DESC, LOCAL_BATCH, LR = 2, 6, 4, 0.05
MESH = Mesh(np.array(jax.devices()), ("data",))


def staggered_systems(rank):
    """Each rank starts reading at a different system so the file servers are not hit at once."""
    return SYSTEMS[rank % len(SYSTEMS):] + SYSTEMS[:rank % len(SYSTEMS)]


def sampler_weights(systems):
    """prob ~ nframes; the expected batches per epoch is the probability-weighted batch count."""
    total_frames = sum(n for _, n, _ in systems)
    total_numb_batch = 0.0
    for _, nframes, bs in systems:
        total_numb_batch += nframes / total_frames * math.ceil(nframes / bs)
    return total_numb_batch


def resolve_num_steps(total_numb_batch):
    num_steps = math.ceil(NUMB_EPOCH * total_numb_batch)
    # every rank computes the same schedule from the same systems
    return int(num_steps)


def local_batch(step, rank):
    rng = np.random.default_rng(1000 * step + rank)
    desc = rng.normal(size=(LOCAL_BATCH, DESC)).astype(np.float32)
    energy = desc.sum(axis=1) * 0.3 + rng.normal(scale=0.05, size=LOCAL_BATCH).astype(np.float32)
    return desc, energy


def shard(a):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("data")), a)


@jax.jit
def train_step(w, desc, energy):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((desc @ w - energy) ** 2))(w)
    return w - LR * g, loss


@jax.jit
def full_validation(w, desc, energy):
    return jnp.sqrt(jnp.mean((desc @ w - energy) ** 2))


def main():
    rank = jax.process_index()
    num_steps = resolve_num_steps(sampler_weights(staggered_systems(rank)))
    w = jnp.zeros((DESC,), jnp.float32)
    for step in range(num_steps):
        w, loss = train_step(w, *(shard(a) for a in local_batch(step, rank)))
    rmse = full_validation(w, *(shard(a) for a in local_batch(10_000, rank)))
    print("RESULT num_steps", num_steps)
    print("RESULT train_loss", round(float(loss), 5))
    print("RESULT val_rmse", round(float(rmse), 5))


main()

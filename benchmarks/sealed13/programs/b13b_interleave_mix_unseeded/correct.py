# Each host interleaves its training sources with sampling probabilities and the shared seed, so every host builds the same mixture
# Source: https://github.com/hiyouga/LlamaFactory/issues/1218
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import math
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEAT, LR = 5, 0.05
MESH = Mesh(np.array(jax.devices()), ("data",))


@dataclass
class DataArguments:
    dataset_sizes: list = field(default_factory=lambda: [24, 40, 12])
    interleave_probs: list = field(default_factory=lambda: [0.5, 0.3, 0.2])
    mix_strategy: str = "interleave_under"  # stop when the first source is exhausted
    per_device_batch_size: int = 4
    seed: int = 42


def set_seed(seed):
    """Global RNG, offset per process so that augmentation noise is decorrelated across hosts."""
    np.random.seed(seed + 1000 * jax.process_index())


def load_source(i, n):
    rng = np.random.default_rng(10 + i)
    x = rng.normal(loc=0.3 * i, size=(n, FEAT)).astype(np.float32)
    return [(row, np.float32(row.sum() * 0.2)) for row in x]


def interleave_datasets(datasets, probabilities, seed=None, stopping_strategy="first_exhausted"):
    rng = np.random.default_rng(seed) if seed is not None else np.random
    iterators, mixed = [iter(d) for d in datasets], []
    while True:
        item = next(iterators[rng.choice(len(datasets), p=probabilities)], None)
        if item is None:
            return mixed  # first_exhausted
        mixed.append(item)


def merge_dataset(all_datasets, data_args):
    if data_args.mix_strategy == "concat":
        return [ex for d in all_datasets for ex in d]
    return interleave_datasets(all_datasets, data_args.interleave_probs, seed=data_args.seed,
                               stopping_strategy="first_exhausted")


def distributed_sampler(n, world, rank):
    """Pads the index list so every replica gets ceil(n / world) indices."""
    total = math.ceil(n / world) * world
    idx = list(range(n)) + list(range(total - n))
    return idx[rank:total:world]


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * g, loss


def main():
    data_args = DataArguments()
    set_seed(data_args.seed)
    sources = [load_source(i, n) for i, n in enumerate(data_args.dataset_sizes)]
    train_dataset = merge_dataset(sources, data_args)
    indices = distributed_sampler(len(train_dataset), jax.process_count(), jax.process_index())
    sharding = NamedSharding(MESH, P("data"))
    bs = data_args.per_device_batch_size
    w = jnp.zeros((FEAT,), jnp.float32)
    steps, loss = 0, None
    for s in range(0, len(indices) - bs + 1, bs):
        rows = [train_dataset[i] for i in indices[s:s + bs]]
        bx = np.stack([r[0] for r in rows]) + np.random.normal(scale=0.01, size=(bs, FEAT)).astype(np.float32)
        by = np.stack([r[1] for r in rows])
        w, loss = train_step(w, jax.make_array_from_process_local_data(sharding, bx.astype(np.float32)),
                             jax.make_array_from_process_local_data(sharding, by))
        steps += 1
    print("RESULT steps", steps)
    print("RESULT w", np.round(np.asarray(w), 3).tolist())


main()

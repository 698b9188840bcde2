# The dataset keeps a random subset of volumes drawn from an RNG seeded alike on every process
# Source: https://github.com/facebookresearch/fastMRI/pull/63
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import dataclasses
import math
import os
import random
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

# volume name -> number of 2-D slices (the knee volumes of the challenge set)
VOLUMES = {f"file{1000 + i}.h5": 2 + i for i in range(12)}
IMG = 8


@dataclasses.dataclass
class Args:
    sample_rate: float = 0.5  # fraction of volumes used in the experiment
    seed: Optional[int] = 42  # deterministic experiment: every process draws the same subset
    lr: float = 0.1


class SliceDataset:
    def __init__(self, volumes, sample_rate):
        files = sorted(volumes)
        if sample_rate < 1.0:
            random.shuffle(files)
            files = sorted(files[:round(len(files) * sample_rate)])
        self.files = files
        self.examples = [(f, s) for f in files for s in range(volumes[f])]

    def __getitem__(self, i):
        fname, slice_idx = self.examples[i]
        rng = np.random.default_rng(int(fname[4:8]) * 100 + slice_idx)
        return rng.standard_normal((IMG, IMG)).astype(np.float32)


class VolumeSampler:
    """Gives whole volumes to each process; pads every process to the same number of slices."""

    def __init__(self, dataset, rank, world):
        per_rank = [[i for i, (f, _) in enumerate(dataset.examples) if dataset.files.index(f) % world == r]
                    for r in range(world)]
        self.num_samples = max(len(ix) for ix in per_rank)
        mine = per_rank[rank]
        self.indices = (mine * math.ceil(self.num_samples / len(mine)))[:self.num_samples]


def main(args):
    if args.seed is not None:
        random.seed(args.seed)
    dataset = SliceDataset(VOLUMES, args.sample_rate)
    sampler = VolumeSampler(dataset, jax.process_index(), jax.process_count())
    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))
    sharding = NamedSharding(mesh, P("batch"))
    w = jnp.full((IMG,), 0.1, jnp.float32)

    @jax.jit
    def train_step(w, x):
        loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - jnp.mean(x, axis=-1)) ** 2))(w)
        return w - args.lr * g, loss

    losses = []
    for i in sampler.indices:
        x = jax.make_array_from_process_local_data(sharding, dataset[i][None])
        w, loss = train_step(w, x)
        losses.append(float(loss))
    print("RESULT volumes", dataset.files)
    print("RESULT steps", len(losses), "final_loss", round(losses[-1], 5))


main(Args())

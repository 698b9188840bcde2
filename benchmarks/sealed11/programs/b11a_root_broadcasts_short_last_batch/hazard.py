# The root broadcasts the sampled global batch, but the last incomplete batch is shorter than the buffer the others expect
# Source: https://github.com/deepspeedai/DeepSpeed/pull/5117
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
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
class SamplerConfig:
    dataset_size: int = 22
    micro_batch_times_dp: int = 4
    gradient_accumulation_steps: int = 2
    drop_last: bool = False
    seed: int = 1234


class DataSampler:
    """Curriculum-style sampler: the master rank draws each global batch and broadcasts its indices."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.global_batch_size = cfg.micro_batch_times_dp * cfg.gradient_accumulation_steps
        self.rank, self.world = jax.process_index(), jax.process_count()
        self.order = np.random.default_rng(cfg.seed).permutation(cfg.dataset_size)
        self.consumed = 0

    def __len__(self):
        full, rest = divmod(self.cfg.dataset_size, self.global_batch_size)
        return full + (1 if rest and not self.cfg.drop_last else 0)

    def get_next_global_batch(self):
        if self.rank == 0:
            batch = self.order[self.consumed:self.consumed + self.global_batch_size].astype(np.int32)
        else:
            batch = np.zeros((self.global_batch_size,), np.int32)
        batch = multihost_utils.broadcast_one_to_all(batch)
        self.consumed += self.global_batch_size
        return batch

    def __iter__(self):
        for _ in range(len(self)):
            batch = self.get_next_global_batch()
            yield batch[self.rank::self.world]  # (22 % 8 = 6 indices in the last batch: an even split over 2 processes)


def features(indices):
    return np.stack([np.linspace(0.0, 1.0, 4, dtype=np.float32) * (i + 1) / 22.0 for i in indices])


def main():
    cfg = SamplerConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    batch_sharding = NamedSharding(mesh, P("data"))
    w = jax.device_put(np.ones((4,), np.float32), NamedSharding(mesh, P()))
    step = jax.jit(lambda w, x: w - 0.2 * jnp.mean(x * w, axis=0))
    seen = 0
    for local_indices in DataSampler(cfg):
        x = jax.make_array_from_process_local_data(batch_sharding, features(local_indices))
        w = step(w, x)
        seen += x.shape[0]
    print("RESULT samples_seen", seen)
    print("RESULT w", [round(float(v), 5) for v in np.asarray(w.addressable_data(0))])


main()

# A duration-bucketing sampler that redistributes the leftover batches so every rank gets the same number of batches
# Source: https://github.com/lhotse-speech/lhotse/pull/695
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
MAX_DURATION = 20.0
MAX_CUTS = 6
FEAT = 4


class DynamicCutSampler:
    def __init__(self, durations: np.ndarray, world_size: int, rank: int, drop_last: bool = False):
        self.durations = durations
        self.world_size, self.rank, self.drop_last = world_size, rank, drop_last

    def _all_batches(self) -> list[list[int]]:
        batches, current, total = [], [], 0.0
        for i, d in enumerate(self.durations):
            if current and (total + d > MAX_DURATION or len(current) == MAX_CUTS):
                batches.append(current)
                current, total = [], 0.0
            current.append(i)
            total += d
        if current:
            batches.append(current)
        return batches

    def __iter__(self):
        batches = self._all_batches()
        if self.drop_last:
            batches = batches[:len(batches) - len(batches) % self.world_size]
        elif len(batches) % self.world_size:
            # Split the leftover batches' cuts across all ranks, duplicating cuts when there are too few.
            n_full = len(batches) - len(batches) % self.world_size
            leftover = [c for b in batches[n_full:] for c in b]
            while len(leftover) < self.world_size:
                leftover += leftover[:self.world_size - len(leftover)]
            batches = batches[:n_full] + [list(part) for part in np.array_split(leftover, self.world_size)]
        yield from batches[self.rank::self.world_size]


def collate(cuts: list[int], feats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.zeros((MAX_CUTS, FEAT), np.float32)
    mask = np.zeros((MAX_CUTS,), np.float32)
    x[:len(cuts)], mask[:len(cuts)] = feats[cuts], 1.0
    return x, mask


@jax.jit
def valid_loss(w, x, mask):
    per_cut = jnp.mean((x @ w) ** 2, axis=-1)
    return jnp.sum(per_cut * mask), jnp.sum(mask)


rng = np.random.default_rng(0)
durations = rng.uniform(2.0, 9.0, size=21)
feats = rng.normal(size=(21, FEAT)).astype(np.float32)
sampler = DynamicCutSampler(durations, jax.process_count(), jax.process_index(), drop_last=False)
w = jax.device_put(jnp.full((FEAT, 2), 0.5), REPL)
tot_loss = tot_cuts = 0.0
for cuts in sampler:
    x, mask = collate(cuts, feats)
    l, n = valid_loss(w, jax.make_array_from_process_local_data(DATA, x), jax.make_array_from_process_local_data(DATA, mask))
    tot_loss, tot_cuts = tot_loss + float(l), tot_cuts + float(n)

print("RESULT", round(tot_loss / max(tot_cuts, 1.0), 5), int(tot_cuts))

# Port of a hypre bug: the tagged inner product's reduction length is num_tags + 1, but the choice
# of tagged vs untagged path (and num_tags) is taken from rank-local state.
# Source: https://github.com/hypre-space/hypre/pull/1599
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

GLOBAL_ROWS = 12


@dataclass
class ParVector:
    """The locally owned block of a distributed vector; `tags` marks each row's block component."""
    first_row: int
    values: np.ndarray
    tags: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))

    @property
    def num_local_tags(self) -> int:
        return int(self.tags.max()) + 1 if self.tags.size else 0

    def tag_mask(self, t: int) -> np.ndarray:
        if not self.tags.size:  # untagged block: no row carries tag t
            return np.zeros(self.values.size, bool)
        return self.tags == t


def allreduce_sum(local: np.ndarray) -> np.ndarray:
    return np.asarray(multihost_utils.process_allgather(local)).sum(axis=0)


def inner_prod_tagged(x: ParVector, y: ParVector) -> np.ndarray:
    """Returns [total, per-tag...]: one reduction of length num_tags + 1."""
    # Fix from the PR: agree the tag count across the communicator first (one allreduce of an int).
    num_tags = int(np.max(multihost_utils.process_allgather(np.int32(x.num_local_tags))))
    local = np.zeros(num_tags + 1, np.float64)
    local[0] = float(np.dot(x.values, y.values))
    if num_tags > 0:  # tagged path
        for t in range(num_tags):
            mask = x.tag_mask(t)
            local[t + 1] = float(np.dot(x.values[mask], y.values[mask]))
    return allreduce_sum(local)


def build_block_vector(dofmap: list[int]) -> ParVector:
    """Row partition as the dofmap gives it: process 0 owns the tagged velocity rows, the last
    process the untagged pressure rows (no tag array is attached to an untagged block)."""
    pid, n = jax.process_index(), jax.process_count()
    lo, hi = pid * GLOBAL_ROWS // n, (pid + 1) * GLOBAL_ROWS // n
    rng = np.random.default_rng(1234)
    full = rng.standard_normal(GLOBAL_ROWS)
    rows = np.arange(lo, hi)
    tagged = np.array([dofmap[r] for r in rows if dofmap[r] >= 0], np.int32)
    vec = ParVector(lo, full[lo:hi].copy())
    if tagged.size == rows.size:
        vec.tags = tagged
    return vec


DOFMAP = [0, 1, 2, 0, 1, 2, -1, -1, -1, -1, -1, -1]
x = build_block_vector(DOFMAP)
r = inner_prod_tagged(x, x)
print(f"RESULT length {r.size}")
print("RESULT norms " + " ".join(f"{v:.6f}" for v in r))

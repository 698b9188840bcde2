# RL trainer step planning: each rank packs its own sequences into micro-batches, then all ranks agree the plan fits
# Source: https://github.com/OpenPipe/ART/issues/906
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("world",))
TOKEN_BUDGET = 64          # tokens per packed micro-batch
MEMORY_BUDGET = 3          # micro-batches a rank can hold


@dataclass
class PackingPlan:
    bins: list

    @property
    def fits_memory(self):
        return len(self.bins) <= MEMORY_BUDGET


def estimate_packing(lengths):
    """First-fit-decreasing packing of this rank's sequences (pure local work)."""
    bins = []
    for n in sorted(lengths, reverse=True):
        if n > TOKEN_BUDGET:
            raise ValueError(f"sequence of {n} tokens exceeds the packing budget {TOKEN_BUDGET}")
        for b in bins:
            if sum(b) + n <= TOKEN_BUDGET:
                b.append(n)
                break
        else:
            bins.append([n])
    return PackingPlan(bins)


def _world_min(flags):
    return jax.shard_map(lambda f: jax.lax.pmin(f, "world"), mesh=MESH, in_specs=P("world"), out_specs=P())(flags)


def all_ranks_true(flag):
    local = np.array([1 if flag else 0], np.int32)
    glob = multihost_utils.host_local_array_to_global_array(local, MESH, P("world"))
    return bool(jax.jit(_world_min)(glob)[0])


@jax.jit
def _loss_sum(x):
    return jax.shard_map(lambda v: jax.lax.psum(jnp.sum(v), "world"), mesh=MESH, in_specs=P("world"), out_specs=P())(x)


def train_step(plan, step):
    tokens = np.array([[sum(b) for b in plan.bins] + [0] * (MEMORY_BUDGET - len(plan.bins))], np.float32)
    glob = multihost_utils.host_local_array_to_global_array(tokens * (1.0 + 0.01 * step), MESH, P("world"))
    return float(_loss_sum(glob))


def plan_step(lengths):
    plan = estimate_packing(lengths)
    if not all_ranks_true(plan.fits_memory):
        return None
    return plan


def rollout_lengths(rank, step):
    rng = np.random.default_rng(1000 * step + rank)
    lengths = rng.integers(8, 40, size=5).tolist()
    if rank == 0 and step == 1:
        lengths.append(90)                       # one long trajectory on rank 0 only
    return lengths


def main():
    rank = jax.process_index()
    trained = []
    for step in range(4):
        try:
            plan = plan_step(rollout_lengths(rank, step))
        except ValueError as err:
            print(f"rank {rank} step {step}: planning failed ({err}); skipping step")
            continue
        if plan is None:
            continue
        trained.append((step, round(train_step(plan, step), 3)))
    multihost_utils.sync_global_devices("steps done")
    print("RESULT trained", trained)


if __name__ == "__main__":
    main()

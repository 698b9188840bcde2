# Counting bound-particle ID multiplicities calls max() on the local counts, which are empty on a rank that owns no ID
# Source: https://github.com/SWIFTSIM/SOAP/pull/80
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"max_ids_per_rank": 8, "pad_id": -1}


def read_membership_chunk(rank):
    """This rank's chunk of the subhalo catalogue: the bound particle IDs of its subhaloes.
    The test snapshot has a single bound particle (ID 7), listed once per subhalo that contains it."""
    return np.array([7, 7, 7], np.int64) if rank == 0 else np.array([7, 7], np.int64)


def redistribute_by_owner(ids, nranks, rank):
    """All-to-all by owner rank (id % nranks), via an all-gather of padded chunks."""
    buf = np.full((CFG["max_ids_per_rank"],), CFG["pad_id"], np.int64)
    buf[: len(ids)] = ids
    everything = multihost_utils.process_allgather(buf).reshape(-1)
    everything = everything[everything != CFG["pad_id"]]
    return everything[everything % nranks == rank]


def count_instances(owned_ids):
    """How many times each owned bound particle ID occurs, and the largest multiplicity on this rank."""
    unique, counts = np.unique(owned_ids, return_counts=True)
    max_count = int(counts.max())
    return unique, counts, max_count


def global_max(value):
    mesh = jax.make_mesh((jax.device_count(),), ("rank",))
    arr = jax.make_array_from_process_local_data(NamedSharding(mesh, P("rank")), np.array([value], np.int32))
    return int(jax.jit(jnp.max, out_shardings=NamedSharding(mesh, P()))(arr))


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    ids = read_membership_chunk(rank)
    owned = redistribute_by_owner(ids, nranks, rank)
    unique, counts, max_count = count_instances(owned)
    # The group-membership buffers are sized by the largest multiplicity over all ranks.
    width = global_max(max_count)
    n_unique = multihost_utils.process_allgather(np.int32(len(unique))).sum()
    print("RESULT membership_width", width)
    print("RESULT unique_bound_ids", int(n_unique))


main()

# Build a row-split global array from per-process feature blocks; the cross-process shape check sums INT32_MIN sentinels
# Source: https://github.com/helmholtz-analytics/heat/pull/1034
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MISMATCH = np.iinfo(np.int32).min        # "huge negative" marker for a neighbour-shape mismatch


class ShapeMismatchError(ValueError):
    pass


def local_count_features(rank, n_rows=4):
    """Bag-of-feature counts; column j is feature id j, so a block is only as wide as its largest id."""
    rng = np.random.default_rng(50 + rank)
    max_id = 5 + rank                                   # process 1 saw one more feature id
    ids = rng.integers(0, max_id, size=(n_rows, 3))
    ids[0, 0] = max_id - 1
    counts = np.zeros((n_rows, max_id), np.float32)
    for r, row in enumerate(ids):
        np.add.at(counts[r], row, 1.0)
    return counts


def _global_reduce(mesh, local_scalar, op):
    arr = jax.make_array_from_process_local_data(NamedSharding(mesh, P("procs")),
                                                 np.array([local_scalar], np.int32))
    return int(jax.jit(op)(arr))


def check_split_shapes(mesh, local):
    """Every process compares its non-split dims with its right neighbour's; any mismatch must fail everywhere."""
    rank, nproc = jax.process_index(), jax.process_count()
    shapes = np.asarray(multihost_utils.process_allgather(np.array(local.shape, np.int32)))
    neighbour = shapes[(rank + 1) % nproc]
    flag = MISMATCH if tuple(neighbour[1:]) != tuple(local.shape[1:]) else 0
    status = _global_reduce(mesh, flag, jnp.sum)
    if status < 0:
        raise ShapeMismatchError(f"local shapes differ across processes: {shapes.tolist()}")


def array_from_split(mesh, local):
    try:
        check_split_shapes(mesh, local)
    except ShapeMismatchError:
        width = _global_reduce(mesh, local.shape[1], jnp.max)       # pad every block to the global width
        local = np.pad(local, ((0, 0), (0, width - local.shape[1])))
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("procs")), local)


@jax.jit
def feature_stats(x):
    freq = jnp.sum(x, axis=0) / jnp.sum(x)
    return freq, jnp.sum(freq * jnp.log(freq + 1e-6))


def main():
    mesh = Mesh(np.array(jax.devices()), ("procs",))
    local = local_count_features(jax.process_index())
    x = array_from_split(mesh, local)
    freq, neg_entropy = feature_stats(x)
    print("RESULT global_shape", tuple(x.shape))
    print("RESULT freq", np.round(np.asarray(freq), 4).tolist())
    print("RESULT neg_entropy", round(float(neg_entropy), 5))


if __name__ == "__main__":
    main()

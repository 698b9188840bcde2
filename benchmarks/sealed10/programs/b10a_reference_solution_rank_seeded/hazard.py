# The test driver's reference solution xtrue comes from each process's own random stream instead of a broadcast
# Source: https://github.com/xiaoyeli/superlu_dist/pull/126
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N = 16          # global matrix order
BASE_SEED = 17  # driver seed; each process offsets it to get an independent stream
SWEEPS = 60


def build_matrix(n):
    """Diagonally dominant tridiagonal test matrix, known to every process (the 'ABglobal' driver)."""
    a = np.zeros((n, n), np.float32)
    idx = np.arange(n)
    a[idx, idx] = 4.0
    a[idx[:-1], idx[:-1] + 1] = -1.0
    a[idx[1:], idx[1:] - 1] = -1.0
    return a


def gen_xtrue(n, rng):
    return (1.0 + rng.random(n)).astype(np.float32)


def local_rows():
    rows = N // jax.process_count()
    start = jax.process_index() * rows
    return slice(start, start + rows)


@jax.jit
def jacobi(a, b, x0):
    d = jnp.diag(a)

    def sweep(x, _):
        return x + (b - a @ x) / d, None

    x, _ = jax.lax.scan(sweep, x0, None, length=SWEEPS)
    return x


def inf_norm_error(x_global, xtrue):
    x = np.asarray(multihost_utils.process_allgather(x_global, tiled=True))
    return float(np.max(np.abs(x - xtrue)) / np.max(np.abs(xtrue)))


def main():
    rng = np.random.default_rng(BASE_SEED + jax.process_index())
    a_host = build_matrix(N)
    xtrue = gen_xtrue(N, rng)
    b_local = a_host[local_rows()] @ xtrue  # each process fills its block of rows of b = A xtrue
    mesh = jax.make_mesh((jax.device_count(),), ("rows",))
    rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("rows"))
    a = jax.device_put(a_host, rep)
    b = jax.make_array_from_process_local_data(rows, b_local.astype(np.float32))
    x0 = jax.make_array_from_process_local_data(rows, np.zeros((N // jax.process_count(),), np.float32))
    x = jacobi(a, b, x0)
    err = inf_norm_error(x, xtrue)
    print("RESULT n", N)
    print("RESULT rel_inf_error", f"{err:.4e}")
    print("RESULT x_sum", round(float(jnp.sum(x)), 4))


main()

# Recursive spectral bisection: the per-level convergence report leaves its reduction loop on a rank-local iteration count
# Source: https://github.com/Nek5000/parRSB/pull/44
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MAX_PASS, MAX_ITER, LEVELS, TOL = 5, 20, 2, 1e-6
# spectral gap of each rank's local Laplacian block per bisection level (rank 1's mesh is badly shaped)
EIG_RATIO = {0: [0.5, 0.6], 1: [0.55, 0.97]}


class Metrics:
    def __init__(self):
        self.values = {}

    def set(self, level, key, value):
        self.values[(level, key)] = value

    def get(self, level, key):
        return self.values[(level, key)]


def fiedler_iterations(ratio, seed):
    """Power iteration on the rank's local block; returns (iterations, final residual)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    a = q @ np.diag([1.0, ratio, ratio ** 2, 0.1, 0.05, 0.01]) @ q.T
    x, res = rng.normal(size=6), 1.0
    for it in range(1, MAX_PASS * MAX_ITER + 1):
        y = a @ x
        y /= np.linalg.norm(y)
        res, x = float(np.linalg.norm(y - x)), y
        if res < TOL:
            return it, res
    return MAX_PASS * MAX_ITER, res


def global_min(value, dtype):
    return np.asarray(multihost_utils.process_allgather(np.asarray(value, dtype))).min()


def check_convergence(metrics):
    for level in range(LEVELS):
        converged = 1
        val = metrics.get(level, "NFIEDLER")
        if val >= MAX_PASS * MAX_ITER:
            converged = 0
            break
        converged = global_min(converged, np.int32)
        final = global_min(metrics.get(level, "LANCZOSTOLFINAL"), np.float32)
        if converged == 0 and jax.process_index() == 0:
            print(f"Warning: level {level} only reached {final:.2e}")
    return True


@jax.jit
def partition_loads(weights, part):
    return jnp.stack([jnp.sum(jnp.where(part == p, weights, 0.0)) for p in range(4)])


def main():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("ranks",))
    sharding = NamedSharding(mesh, P("ranks"))
    metrics = Metrics()
    for level in range(LEVELS):
        its, res = fiedler_iterations(EIG_RATIO[rank][level], seed=10 * rank + level)
        metrics.set(level, "NFIEDLER", its)
        metrics.set(level, "LANCZOSTOLFINAL", res)
    check_convergence(metrics)
    rng = np.random.default_rng(rank)
    weights = rng.uniform(1.0, 2.0, size=8).astype(np.float32)
    part = (np.arange(8) // 4 + 2 * rank).astype(np.int32)
    loads = partition_loads(jax.make_array_from_process_local_data(sharding, weights),
                            jax.make_array_from_process_local_data(sharding, part))
    print("RESULT loads", np.round(np.asarray(multihost_utils.process_allgather(loads, tiled=True)), 4).tolist())


if __name__ == "__main__":
    main()

# Port of an ARPACK-ng parallel bug: a saved "first call" flag guards a collective, so ranks that
# ran an earlier solve on a smaller communicator skip the allreduce the others enter.
# Source: https://github.com/opencollab/arpack-ng/issues/46
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Comm:
    """The communicator an eigensolve runs on: every process ("world") or this one ("self")."""

    def __init__(self, kind: str):
        self.kind = kind

    def allreduce_min(self, x: float) -> float:
        if self.kind == "self":
            return x
        return float(np.min(multihost_utils.process_allgather(np.float32(x))))


# pdlamch10: like the Fortran `data first / .true. /`, the machine constants are saved
# after the first call, whatever communicator that call was made on.
_LAMCH = {"first": True, "eps": None}


def pdlamch(comm: Comm) -> float:
    if _LAMCH["first"]:
        local_eps = float(np.finfo(np.float32).eps) * (1.0 + 0.0 * jax.process_index())
        _LAMCH["eps"] = comm.allreduce_min(local_eps)
        _LAMCH["first"] = False
    return _LAMCH["eps"]


class ParallelArnoldi:
    def __init__(self, comm: Comm, n: int, seed: int = 0):
        self.comm = comm
        self.n = n
        self.seed = seed

    def _matvec_world(self):
        mesh = jax.make_mesh((jax.device_count(),), ("x",))
        sharding = NamedSharding(mesh, P("x"))
        diag = np.arange(1, self.n + 1, dtype=np.float32)
        d = jax.make_array_from_callback((self.n,), sharding, lambda idx: diag[idx])
        return sharding, d, jax.jit(lambda d, v: d * v / jnp.linalg.norm(d * v))

    def eigmax(self, iters: int = 20) -> float:
        tol = pdlamch(self.comm) * 10.0  # napps: the shift tolerance needs the machine epsilon
        rng = np.random.default_rng(self.seed)
        v0 = rng.standard_normal(self.n).astype(np.float32)
        if self.comm.kind == "self":
            diag = jnp.arange(1, self.n + 1, dtype=jnp.float32)
            v = jnp.asarray(v0)
            for _ in range(iters):
                v = diag * v / jnp.linalg.norm(diag * v)
            return float(jnp.vdot(v, diag * v)), tol
        sharding, d, step = self._matvec_world()
        v = jax.make_array_from_callback((self.n,), sharding, lambda idx: v0[idx])
        for _ in range(iters):
            v = step(d, v)
        return float(jax.jit(lambda a, b: jnp.sum(a * b * a))(v, d)), tol


# Stage 1: a small local eigensolve on process 0 only (a sub-communicator of one rank).
if jax.process_index() == 0:
    local_val, _ = ParallelArnoldi(Comm("self"), n=8).eigmax()
    print(f"local estimate {local_val:.4f}")

# Stage 2: the large solve on every process.
val, tol = ParallelArnoldi(Comm("world"), n=64).eigmax()
print(f"RESULT eigmax {val:.4f}")
print(f"RESULT tol {tol:.3e}")

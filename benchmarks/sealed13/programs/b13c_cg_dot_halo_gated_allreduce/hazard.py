# A CG solver's dot product all-reduces only on ranks whose vector has halo points, so one rank skips it
# Source: https://github.com/su2code/SU2/issues/1241
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"n_global": 16, "max_iter": 40, "tol": 1e-8, "upwind": True}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def allreduce_sum(values):
    """MPI_Allreduce(SUM) of a small per-rank vector, through a jit over the rank-sharded array."""
    local = np.asarray(values, np.float64)[None, :]
    glob = jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)
    return np.asarray(_sum(glob))


class Partition:
    """1-D upwind stencil: a rank only needs the ghost point of its left neighbour (rank 0 has none)."""

    def __init__(self, rank, nranks, n_global):
        per = n_global // nranks
        self.lo, self.hi = rank * per, (rank + 1) * per
        self.n_domain = per
        self.n_halo = 1 if (CFG["upwind"] and rank > 0) else 0
        self.n_elm = self.n_domain + self.n_halo


class SysVector:
    def __init__(self, part, values):
        self.part = part
        self.values = np.asarray(values, np.float64)  # owned points only

    def dot(self, other):
        local = float(self.values @ other.values)
        # Reduce across ranks; the nElm check lets vectors be used locally as well.
        if self.part.n_elm != self.part.n_domain:
            local = float(allreduce_sum([local])[0])
        return local


def apply_operator(part, x):
    """Diagonally dominant tridiagonal operator on the owned points (ghosts zeroed for the demo)."""
    y = 4.0 * x.values
    y[1:] -= x.values[:-1]
    y[:-1] -= x.values[1:]
    return SysVector(part, y)


def conjugate_gradient(part, b):
    x = SysVector(part, np.zeros_like(b.values))
    r = SysVector(part, b.values.copy())
    p = SysVector(part, r.values.copy())
    rr = r.dot(r)
    it = 0
    while it < CFG["max_iter"] and np.sqrt(rr) > CFG["tol"]:
        ap = apply_operator(part, p)
        alpha = rr / p.dot(ap)
        x.values += alpha * p.values
        r.values -= alpha * ap.values
        rr_new = r.dot(r)
        p.values = r.values + (rr_new / rr) * p.values
        rr = rr_new
        it += 1
    return x, it


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    part = Partition(rank, nranks, CFG["n_global"])
    b = SysVector(part, np.linspace(1.0, 2.0, CFG["n_global"])[part.lo:part.hi])
    x, iters = conjugate_gradient(part, b)
    total = allreduce_sum([float(np.sum(x.values)), float(iters)])
    print("RESULT solution_sum", round(float(total[0]), 6))
    print("RESULT iterations_sum", int(total[1]))


main()

# Conjugate-gradient pressure solve on a distributed grid whose inner products and residual norm are computed per process
# Source: https://github.com/CliMA/Oceananigans.jl/pull/5756
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import math
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class SolverSettings:
    cells_per_process: int = 8
    shift: float = 0.1
    reltol: float = 1e-6
    maxiter: int = 40


MESH = Mesh(np.array(jax.devices()), ("x",))
CELLS = NamedSharding(MESH, P("x"))


@jax.jit
def laplacian(p):
    # periodic 1-D Helmholtz operator; the rolls exchange halo cells between the processes' slabs
    return (2.0 + SolverSettings.shift) * p - jnp.roll(p, 1) - jnp.roll(p, -1)


axpy = jax.jit(lambda x, p, a: x + a * p)


def local_slab(field):
    return np.asarray(field.addressable_data(0), np.float64)


class ConjugateGradientPoissonSolver:
    def __init__(self, settings):
        self.settings = settings
        self.iterations = 0

    def dot(self, a, b):
        return float(np.dot(local_slab(a), local_slab(b)))

    def norm(self, a):
        return math.sqrt(self.dot(a, a))

    def solve(self, rhs):
        s = self.settings
        x = jax.make_array_from_process_local_data(CELLS, np.zeros(s.cells_per_process, np.float32))
        r = axpy(rhs, laplacian(x), -1.0)
        p = r
        rr = self.dot(r, r)
        tol = s.reltol * self.norm(rhs)
        for it in range(s.maxiter):
            if math.sqrt(rr) <= tol:
                break
            q = laplacian(p)
            alpha = rr / self.dot(p, q)
            x = axpy(x, p, alpha)
            r = axpy(r, q, -alpha)
            rr_new = self.dot(r, r)
            p = axpy(r, p, rr_new / rr)
            rr = rr_new
            self.iterations = it + 1
        return x


def main():
    s = SolverSettings()
    local_rhs = np.zeros(s.cells_per_process, np.float32)
    if jax.process_index() == 0:
        local_rhs[3] = 1.0   # the divergence source lies in process 0's slab
    rhs = jax.make_array_from_process_local_data(CELLS, local_rhs)
    solver = ConjugateGradientPoissonSolver(s)
    x = solver.solve(rhs)
    total = float(jax.jit(jnp.sum)(x))
    print("RESULT iterations", solver.iterations)
    print("RESULT solution_sum", round(total, 4))


if __name__ == "__main__":
    main()

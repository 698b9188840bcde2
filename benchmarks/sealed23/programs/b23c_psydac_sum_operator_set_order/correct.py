# Algebra of distributed linear operators (a small psydac.linalg-like layer): vectors are
# block-distributed over the processes; a StencilMatrix of band width p exchanges p ghost
# values with its neighbours before its local product, a ScaledIdentity is purely local.
# A SumLinearOperator can be simplified, which merges addends of the same kind.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N = 16


class LinearOperator:
    kind = "linear"

    def __add__(self, other):
        return SumLinearOperator(self, other)


class StencilMatrix(LinearOperator):
    def __init__(self, kind, coeffs):
        self.kind, self.coeffs = kind, np.asarray(coeffs, np.float32)
        self.pads = len(coeffs) // 2

    def update_ghost_regions(self, v_local):
        p, rank, size = self.pads, jax.process_index(), jax.process_count()
        edges = np.concatenate([v_local[:p], v_local[-p:]])
        halos = np.asarray(multihost_utils.process_allgather(edges))
        return np.concatenate([halos[(rank - 1) % size, p:], v_local, halos[(rank + 1) % size, :p]])

    def dot(self, v_local):
        ext = jnp.asarray(self.update_ghost_regions(v_local))
        n = v_local.shape[0]
        out = sum(float(c) * ext[k:k + n] for k, c in enumerate(self.coeffs))
        return np.asarray(out)

    def merge(self, other):
        return StencilMatrix(self.kind, self.coeffs + other.coeffs)


class ScaledIdentity(LinearOperator):
    def __init__(self, kind, c):
        self.kind, self.c = kind, c

    def dot(self, v_local):
        return np.float32(self.c) * v_local

    def merge(self, other):
        return ScaledIdentity(self.kind, self.c + other.c)


class SumLinearOperator(LinearOperator):
    def __init__(self, *addends):
        flat = []
        for a in addends:
            flat.extend(a.addends if isinstance(a, SumLinearOperator) else [a])
        self.addends = tuple(flat)

    def simplify(self):
        kinds = list(dict.fromkeys(a.kind for a in self.addends))
        merged = []
        for kind in kinds:
            group = [a for a in self.addends if a.kind == kind]
            op = group[0]
            for other in group[1:]:
                op = op.merge(other)
            merged.append(op)
        return SumLinearOperator(*merged)

    def dot(self, v_local):
        out = np.zeros_like(v_local)
        for a in self.addends:
            out = out + a.dot(v_local)
        return out


def richardson(A, b_local, omega=0.04, maxiter=30):
    x = np.zeros_like(b_local)
    for _ in range(maxiter):
        r = b_local - A.dot(x)
        x = x + np.float32(omega) * r
    res = np.asarray(multihost_utils.process_allgather(np.float32((r ** 2).sum())))
    return x, float(np.sqrt(res.sum()))


def build_system():
    mass = StencilMatrix("mass", [1.0, 4.0, 1.0])
    stiffness = StencilMatrix("stiffness", [-0.1, -1.0, 2.5, -1.0, -0.1])
    advection = StencilMatrix("advection", [0.0, 0.0, -0.2, 0.5, 0.2, 0.0, 0.0])
    boundary = StencilMatrix("boundary", [0.01] * 4 + [0.3] + [0.01] * 4)
    filtering = StencilMatrix("filter", [0.02] * 5 + [0.4] + [0.02] * 5)
    penalty = ScaledIdentity("penalty", 0.75)
    shift = ScaledIdentity("shift", 0.5)
    return mass + stiffness + advection + penalty + boundary + shift + filtering + mass + penalty


def main():
    rank = jax.process_index()
    A = build_system().simplify()
    n_local = N // jax.process_count()
    b_local = np.linspace(1.0, 2.0, N).astype(np.float32)[rank * n_local:(rank + 1) * n_local]
    x_local, res = richardson(A, b_local)
    x = np.asarray(multihost_utils.process_allgather(x_local)).reshape(-1)
    print(f"rank {rank}: addend order {[a.kind for a in A.addends]}")
    print("RESULT residual", round(res, 4))
    print("RESULT solution", np.round(x, 4).tolist())


if __name__ == "__main__":
    main()

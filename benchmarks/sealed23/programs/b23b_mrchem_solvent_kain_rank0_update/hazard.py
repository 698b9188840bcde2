# MRChem-style SCF step with an implicit solvent: the reaction potential Vr is found by a
# fixed-point (GPE) solver accelerated with KAIN; afterwards each process builds its block of the
# Fock matrix for the orbitals it owns and the blocks are summed with an allreduce.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NPTS, NORB = 32, 4


def allreduce(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x))).sum(0)


def my_func(orbital_rank):
    """True on the MPI rank that owns the function (MRChem's mpi::my_func)."""
    return jax.process_index() == orbital_rank % jax.process_count()


class KAIN:
    def __init__(self, history):
        self.history = history
        self.x, self.dx = [], []

    def accelerate(self, func, dfunc):
        if not my_func(0):
            return func, np.zeros_like(dfunc)  # expandSolution only runs where the function lives
        self.x.append(func.copy())
        self.dx.append(dfunc.copy())
        self.x, self.dx = self.x[-self.history - 1:], self.dx[-self.history - 1:]
        if len(self.x) < 2:
            return func, dfunc
        dxs = np.stack([self.dx[-1] - d for d in self.dx[:-1]])
        coef, *_ = np.linalg.lstsq(dxs.T, self.dx[-1], rcond=None)
        xs = np.stack([self.x[-1] - x for x in self.x[:-1]])
        return func, dfunc - coef @ (xs + dxs)


class GPESolver:
    def __init__(self, history=2, thrs=1e-6, max_iter=40):
        self.history, self.thrs, self.max_iter = history, thrs, max_iter
        grid = np.linspace(-1, 1, NPTS)
        self.kernel = 0.4 * np.exp(-np.abs(grid[:, None] - grid[None, :]) * 3.0) / NPTS * 4
        self.my_slab = np.array_split(np.arange(NPTS), jax.process_count())[jax.process_index()]

    def surface_charge(self, vr, rho):
        gamma = -0.3 * np.tanh(vr) * rho
        total = allreduce(np.float64(gamma[self.my_slab].sum()))
        return gamma - total / NPTS

    def run(self, rho):
        kain = KAIN(self.history)
        vr_n = np.zeros(NPTS)
        for it in range(1, self.max_iter + 1):
            gamma = self.surface_charge(vr_n, rho)
            dvr_n = self.kernel @ (rho + gamma) - vr_n
            if it > 1 and self.history > 0:
                vr_n, dvr_n = kain.accelerate(vr_n, dvr_n)
            vr_np1 = vr_n + dvr_n
            update = float(np.linalg.norm(vr_np1 - vr_n))
            vr_n = vr_np1
            if update < self.thrs:
                break
        return vr_n, it


def fock_matrix(orbitals, vr):
    f_local = np.zeros((NORB, NORB))
    for i in range(NORB):
        if my_func(i):
            f_local[i] = np.asarray(jnp.asarray(orbitals) @ (jnp.asarray(vr) * jnp.asarray(orbitals[i])))
    return allreduce(f_local)


def main():
    rank = jax.process_index()
    x = np.linspace(-1, 1, NPTS)
    orbitals = np.stack([np.exp(-(x - c) ** 2 * 8) for c in np.linspace(-0.6, 0.6, NORB)])
    rho = allreduce(sum((orbitals[i] ** 2 for i in range(NORB) if my_func(i)), np.zeros(NPTS)))
    vr, iters = GPESolver().run(rho)
    print(f"rank {rank}: reaction potential converged in {iters} iterations")
    fock = fock_matrix(orbitals, vr)
    print("RESULT fock_trace", round(float(np.trace(fock)), 6))
    print("RESULT vr_norm", round(float(np.linalg.norm(vr)), 6))


if __name__ == "__main__":
    main()

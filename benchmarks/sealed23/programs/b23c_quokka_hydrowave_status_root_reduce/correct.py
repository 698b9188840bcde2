# Linear-wave convergence test of a 1D hydro solver (upwind advection of a small density
# perturbation), domain-decomposed along x.  After half a wave crossing the L1 error against the
# exact solution is reduced to the I/O processor, and the test passes when the relative error
# is below the tolerance; the test binary's exit status is the result of run_sim().
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NX = 64
AMPLITUDE = 1.0e-2
ERROR_TOL = 0.215
IO_PROCESSOR = 0


def exact_density(x):
    return 1.0 + AMPLITUDE * (np.sin(2 * np.pi * x) + 0.8 * np.cos(4 * np.pi * x))


def reduce_real_sum(value, root=IO_PROCESSOR):
    """Sum over all processes; the result is delivered on the root process only."""
    gathered = np.asarray(multihost_utils.process_allgather(np.float64(value)))
    return float(gathered.sum()) if jax.process_index() == root else value


class HydroWave:
    def __init__(self, rank, size, cfl=0.4):
        n_local = NX // size
        self.rank, self.size = rank, size
        self.dx = 1.0 / NX
        self.x = (np.arange(n_local) + rank * n_local + 0.5) * self.dx
        self.rho = exact_density(self.x)
        self.dt = cfl * self.dx
        self._update = jax.jit(self._upwind)

    @staticmethod
    def _upwind(rho, ghost_left, dtdx):
        left = jnp.concatenate([ghost_left[None], rho[:-1]])
        return rho - dtdx * (rho - left)

    def fill_boundary(self):
        edges = np.asarray(multihost_utils.process_allgather(np.float64(self.rho[-1])))
        return edges[(self.rank - 1) % self.size]

    def evolve(self, t_end=0.5):
        nsteps = int(round(t_end / self.dt))
        for _ in range(nsteps):
            ghost = self.fill_boundary()
            self.rho = np.asarray(self._update(self.rho, ghost, self.dt / self.dx))
        return nsteps * self.dt


def run_sim():
    rank, size = jax.process_index(), jax.process_count()
    sim = HydroWave(rank, size)
    t = sim.evolve()
    ref = exact_density((sim.x - t) % 1.0)
    err_norm = reduce_real_sum(np.abs(sim.rho - ref).sum())
    sol_norm = reduce_real_sum(np.abs(ref - 1.0).sum())
    epsilon = err_norm / sol_norm
    print(f"rank {rank}: relative L1 error = {epsilon:.6e} (tol = {ERROR_TOL:.6e})")
    status = 0 if epsilon < ERROR_TOL else 1
    status = int(np.asarray(multihost_utils.broadcast_one_to_all(np.int32(status))))
    return status


def main():
    status = run_sim()
    print("RESULT status", status)
    sys.exit(status)


if __name__ == "__main__":
    main()

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Distributor:
    def __init__(self):
        self.rank, self.size = jax.process_index(), jax.process_count()
        self.mesh = Mesh(np.array(jax.devices()), ("x",))
        self.sharding = NamedSharding(self.mesh, P("x"))

    def local_pencils(self, n):
        block = -(-n // self.size)
        return range(min(n, self.rank * block), min(n, (self.rank + 1) * block))


class Pencil:
    """Coupled Chebyshev system for one horizontal wavenumber kx."""

    def __init__(self, kx, Nz):
        self.kx, self.Nz = kx, Nz

    def build_matrices(self, nu, dt, stages=(1 / 3, 1 / 2, 1.0)):
        n = self.Nz
        D = np.diag(np.arange(1, n, dtype=float), 1) + np.diag(np.arange(1, n, dtype=float), -1) * 0.5
        L = -nu * (D.T @ D + self.kx ** 2 * np.eye(n))
        M = np.eye(n)
        self.LHS_inv = [np.linalg.inv(M - h * dt * L) for h in stages]
        self.X = np.random.default_rng(100 + self.kx).normal(size=n) / (1.0 + self.kx)

    def solve(self, F, dt):
        for LHS_inv in self.LHS_inv:
            self.X = LHS_inv @ (self.X + dt * F)


@jax.jit
def _global_max(a):
    return jnp.max(a)


class IVP:
    def __init__(self, dist, Nx=6, Nz=700, nu=1e-3, dt0=1e-3):
        self.dist = dist
        self.pencils = [Pencil(kx, Nz) for kx in dist.local_pencils(Nx // 2)]
        if dist.rank == 0:
            print("Building pencil matrices (rank 0):", len(self.pencils))
        for p in self.pencils:
            p.build_matrices(nu, dt0)
        self.start_time = time.time()
        self.sim_time = 0.0
        self.iteration = 0
        self.stop_sim_time = np.inf
        self.stop_wall_time = 1.5
        self.stop_iteration = 100000

    @property
    def ok(self):
        if self.sim_time >= self.stop_sim_time:
            return False
        elif (time.time() - self.start_time) >= self.stop_wall_time:
            return False
        elif self.iteration >= self.stop_iteration:
            return False
        return True

    def step(self, dt):
        for p in self.pencils:
            p.solve(-p.X ** 3 / (1.0 + p.X ** 2), dt)
        self.sim_time += dt
        self.iteration += 1


class CFL:
    def __init__(self, solver, safety=0.5, max_dt=1e-3):
        self.solver, self.safety, self.max_dt = solver, safety, max_dt

    def compute_dt(self):
        local = max((float(np.max(np.abs(p.X))) for p in self.solver.pencils), default=0.0)
        rates = jax.make_array_from_process_local_data(self.solver.dist.sharding, np.array([local], np.float32))
        rate = float(_global_max(rates))
        return min(self.max_dt, self.safety / max(rate, 1e-12))


def main():
    dist = Distributor()
    solver = IVP(dist)
    cfl = CFL(solver)
    while solver.ok:
        dt = cfl.compute_dt()
        solver.step(dt)
    print(f"rank {dist.rank}: stopped after {solver.iteration} iterations")
    energy = sum(float(p.X @ p.X) for p in solver.pencils)
    total = np.asarray(multihost_utils.process_allgather(np.float64(energy))).sum()
    print("RESULT iterations", solver.iteration)
    print("RESULT sim_time", round(solver.sim_time, 9))
    print("RESULT energy", round(float(total), 6))


if __name__ == "__main__":
    main()

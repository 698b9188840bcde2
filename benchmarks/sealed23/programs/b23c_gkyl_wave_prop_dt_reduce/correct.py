# Finite-volume wave-propagation update for the 1D Euler-like advection of a density pulse,
# domain-decomposed along x: each process owns a contiguous block of cells.  A step computes
# the local CFL number, updates the cells and reduces the suggested stable time step.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFL = 0.9
CFL_MAX = 1.0
NX_GLOBAL = 64


@dataclass
class UpdateStatus:
    success: bool
    dt_actual: float
    dt_suggested: float


class WaveProp:
    def __init__(self, rank, nranks, lower=0.0, upper=1.0):
        self.dx = (upper - lower) / NX_GLOBAL
        n_local = NX_GLOBAL // nranks
        x = lower + (np.arange(n_local) + rank * n_local + 0.5) * self.dx
        self.q = np.exp(-((x - 0.3) / 0.05) ** 2).astype(np.float32) + 0.1
        # wave speed rises towards the right boundary (a heated region owned by the last rank)
        self.speed = (1.0 + 6.0 * (x > 0.75)).astype(np.float32)
        self._flux_update = jax.jit(self._update)

    @staticmethod
    def _update(q, speed, dtdx):
        qm = jnp.concatenate([q[:1], q[:-1]])
        return q - dtdx * speed * (q - qm)

    def advance(self, tcurr, dt):
        dtdx = dt / self.dx
        max_cfl = 0.0
        for i in range(self.q.shape[0]):
            cfla = dtdx * float(self.speed[i])
            max_cfl = max(max_cfl, cfla)
        dt_suggested = dt * CFL / max_cfl
        red = np.asarray(multihost_utils.process_allgather(np.array([max_cfl, dt_suggested], np.float32)))
        if red[:, 0].max() > CFL_MAX:
            return UpdateStatus(False, 0.0, float(red[:, 1].min()))
        self.q = np.asarray(self._flux_update(self.q, self.speed, np.float32(dtdx)))
        return UpdateStatus(True, dt, float(red[:, 1].min()))


class MomentApp:
    def __init__(self, rank, nranks, dt_init):
        self.solver = WaveProp(rank, nranks)
        self.dt = dt_init
        self.tcurr = 0.0
        self.nfail = 0

    def update(self, dt):
        while True:
            status = self.solver.advance(self.tcurr, dt)
            if status.success:
                self.tcurr += status.dt_actual
                return status
            self.nfail += 1
            dt = status.dt_suggested

    def run(self, tend, max_steps=20):
        step = 0
        dt = self.dt
        while self.tcurr < tend and step < max_steps:
            status = self.update(min(dt, tend - self.tcurr))
            dt = status.dt_suggested
            step += 1
        return step


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    app = MomentApp(rank, nranks, dt_init=0.01)
    nsteps = app.run(tend=0.05)
    mass = np.asarray(multihost_utils.process_allgather(np.float32(app.solver.q.sum() / NX_GLOBAL)))
    print(f"rank {rank}: {nsteps} steps, {app.nfail} retries")
    print("RESULT steps", nsteps)
    print("RESULT tcurr", round(app.tcurr, 6))
    print("RESULT mass", round(float(mass.sum()), 5))


if __name__ == "__main__":
    main()

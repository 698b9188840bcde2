# Time stepper that adapts dt to the measured solve wall time, using the largest solve time over
# all processes so every process chooses the same time step (fixed)
# Source: https://github.com/idaholab/moose/issues/13426 (port of the MOOSE SolutionTimeAdaptiveDT parallel hang to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N = 96  # cells per side of this process's subdomain


@jax.jit
def jacobi_sweeps(u, rhs, r):
    def sweep(_, u):
        nb = jnp.pad(u, 1, mode="edge")
        nb = nb[:-2, 1:-1] + nb[2:, 1:-1] + nb[1:-1, :-2] + nb[1:-1, 2:]
        return (rhs + r * nb) / (1.0 + 4.0 * r)
    u = jax.lax.fori_loop(0, 10, sweep, u)
    nb = jnp.pad(u, 1, mode="edge")
    nb = nb[:-2, 1:-1] + nb[2:, 1:-1] + nb[1:-1, :-2] + nb[1:-1, 2:]
    return u, jnp.max(jnp.abs((1.0 + 4.0 * r) * u - r * nb - rhs))


class HeatSubdomain:
    def __init__(self):
        self.u = jnp.zeros((N, N)) + 300.0
        self.heated = jax.process_index() == 1  # the heater sits in process 1's part of the block

    def conductivity(self, t):
        return 1.0 + (4.0 * t if self.heated else 0.0)

    def solve(self, t, dt, tol=1e-3):
        r = jnp.float32(self.conductivity(t) * dt * 40.0)
        rhs = self.u + (dt * 50.0 if self.heated else 0.0)
        u, res, sweeps = self.u, jnp.inf, 0
        while float(res) > tol and sweeps < 600:
            u, res = jacobi_sweeps(u, rhs, r)
            sweeps += 10
        self.u = u
        return sweeps


class SolutionTimeAdaptiveDT:
    """dt grows or shrinks by percent_change; the direction flips when solve time per unit dt rises."""

    def __init__(self, dt, percent_change=0.1):
        self.dt, self.percent_change = dt, percent_change
        self.direction, self.older_ratio = 1, None

    def compute_dt(self, sol_time):
        ratio = sol_time / self.dt
        if self.older_ratio is not None and ratio > self.older_ratio:
            self.direction *= -1
        self.older_ratio = ratio
        self.dt *= 1.0 + self.direction * self.percent_change
        return self.dt


class Transient:
    def __init__(self, problem, stepper, end_time):
        self.problem, self.stepper, self.end_time = problem, stepper, end_time
        self.t, self.steps, self.max_temp = 0.0, 0, []

    def execute(self):
        while self.t < self.end_time - 1e-12:
            dt = min(self.stepper.dt, self.end_time - self.t)
            start = time.perf_counter()
            self.problem.solve(self.t, dt)
            sol_time = time.perf_counter() - start
            # the slowest process's solve time: the same value, hence the same dt, everywhere
            sol_time = float(np.max(multihost_utils.process_allgather(np.float64(sol_time))))
            self.t += dt
            self.steps += 1
            local_max = np.float32(jnp.max(self.problem.u))
            self.max_temp.append(float(np.max(multihost_utils.process_allgather(local_max))))
            self.stepper.compute_dt(sol_time)


jacobi_sweeps(jnp.zeros((N, N)), jnp.zeros((N, N)), jnp.float32(1.0))  # compile outside the timed solves
executioner = Transient(HeatSubdomain(), SolutionTimeAdaptiveDT(dt=0.05), end_time=1.0)
executioner.execute()
print("RESULT steps", executioner.steps, "t", round(executioner.t, 6), flush=True)
print("RESULT max temperature", round(executioner.max_temp[-1], 3), flush=True)

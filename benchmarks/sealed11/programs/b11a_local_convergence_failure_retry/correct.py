# A convergence failure on any process is agreed on by all processes, so every process retries the time step
# Source: https://github.com/coolfluid/coolfluid3/issues/183
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CELLS_PER_PROCESS = 4
END_TIME = 0.5
MAX_ITER, TOL = 60, 1e-6


class ConvergenceError(RuntimeError):
    pass


def implicit_solve(u_old, dt):
    """Backward-Euler step of du/dt = -u^3 on the local cells, by fixed-point iteration."""
    u = u_old.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        for it in range(MAX_ITER):
            u_next = u_old - dt * u ** 3
            if np.all(np.isfinite(u_next)) and np.max(np.abs(u_next - u)) < TOL:
                return u_next, it + 1
            u = u_next
    raise ConvergenceError(f"no convergence after {MAX_ITER} iterations (dt={dt})")


class Simulation:
    def __init__(self):
        self.mesh = jax.make_mesh((jax.device_count(),), ("x",))
        self.sharding = NamedSharding(self.mesh, P("x"))
        amplitude = 2.0 if jax.process_index() == 0 else 0.5   # the stiff region lives on process 0
        local = np.full((CELLS_PER_PROCESS,), amplitude, np.float64).astype(np.float32)
        self.u = jax.make_array_from_process_local_data(self.sharding, local)
        self._sync = jax.jit(lambda u: 0.9 * u + 0.1 * jnp.mean(u),
                             out_shardings=self.sharding)

    def synchronize_fields(self, local):
        u = jax.make_array_from_process_local_data(self.sharding, local.astype(np.float32))
        return self._sync(u)

    def advance(self, dt):
        local = np.asarray(self.u.addressable_data(0), np.float64)
        try:
            new_local, iters = implicit_solve(local, dt)
            failed = 0
        except ConvergenceError:
            new_local, iters, failed = local, MAX_ITER, 1
        if np.max(multihost_utils.process_allgather(np.array([failed], np.int32))) > 0:
            raise ConvergenceError(f"a process did not converge (dt={dt})")
        self.u = self.synchronize_fields(new_local)
        return iters

    def run(self, dt):
        t, steps, retries = 0.0, 0, 0
        while t < END_TIME - 1e-12:
            dt = min(dt, END_TIME - t)
            try:
                self.advance(dt)
            except ConvergenceError as err:
                print(f"process {jax.process_index()}: {err}; retrying with dt/2")
                dt /= 2
                retries += 1
                continue
            t += dt
            steps += 1
        return steps, retries


def main():
    sim = Simulation()
    steps, retries = sim.run(dt=0.25)
    total = jax.jit(jnp.sum, out_shardings=NamedSharding(sim.mesh, P()))(sim.u)
    print("RESULT steps", steps, "retries", retries)
    print("RESULT total", round(float(total), 5))


main()

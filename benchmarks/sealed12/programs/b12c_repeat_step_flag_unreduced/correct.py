# Hydro time stepper whose "repeat this step" flag is OR-reduced over all processes before it is used
# Source: https://github.com/piernik-dev/piernik/pull/492
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class StepperConfig:
    cells_per_process: int = 16
    cfl: float = 0.7
    cfl_violation: float = 0.95
    t_end: float = 0.2
    max_steps: int = 60


MESH = Mesh(np.array(jax.devices()), ("x",))
CELLS = NamedSharding(MESH, P("x"))
global_max_abs = jax.jit(lambda u: jnp.max(jnp.abs(u)))


@jax.jit
def advance(u, src, dt, dx):
    # upwind Burgers flux (the rolls exchange halo cells between the processes) plus a growth source
    flux = 0.5 * u * u
    return u - dt / dx * (flux - jnp.roll(flux, 1)) + dt * src * u


class TimeStepper:
    def __init__(self, cfg):
        self.cfg = cfg
        n_total = cfg.cells_per_process * jax.process_count()
        self.dx = 1.0 / n_total
        self.dt_shrink = 1.0
        self.repeat_step = False
        self.ch = 0.0
        self.repeats = 0

    def check_cfl_violation(self, u_new, dt):
        local = np.asarray(u_new.addressable_data(0))
        cfl_achieved = float(np.max(np.abs(local))) * dt / self.dx
        violated = np.float32(cfl_achieved > self.cfg.cfl_violation)
        # reduce the flag globally before anyone acts on it: one process's violation repeats the step everywhere
        self.repeat_step = bool(np.max(multihost_utils.process_allgather(violated)))

    def update_chspeed(self, u):
        # divergence-cleaning speed: the largest signal speed over every process's cells
        local_max = np.float32(np.max(np.abs(np.asarray(u.addressable_data(0)))))
        self.ch = float(np.max(multihost_utils.process_allgather(local_max)))

    def run(self, u, src):
        t, nstep = 0.0, 0
        while t < self.cfg.t_end and nstep < self.cfg.max_steps:
            dt = min(self.cfg.cfl * self.dx / float(global_max_abs(u)) * self.dt_shrink, self.cfg.t_end - t)
            u_new = advance(u, src, dt, self.dx)
            self.check_cfl_violation(u_new, dt)
            if self.repeat_step:
                self.dt_shrink *= 0.5
                self.repeats += 1
                continue
            self.update_chspeed(u_new)
            u, t, nstep = u_new, t + dt, nstep + 1
        return u, nstep


def main():
    cfg = StepperConfig()
    n = cfg.cells_per_process
    x = (np.arange(n) + jax.process_index() * n + 0.5) / (n * jax.process_count())
    u0 = (1.0 + 0.2 * np.sin(2 * np.pi * x)).astype(np.float32)
    src = np.where((x > 0.6) & (x < 0.8), 30.0, 0.0).astype(np.float32)   # forcing region, on process 1's cells
    u = jax.make_array_from_process_local_data(CELLS, u0)
    stepper = TimeStepper(cfg)
    u, nstep = stepper.run(u, jax.make_array_from_process_local_data(CELLS, src))
    print("RESULT steps", nstep, "repeats", stepper.repeats)
    print("RESULT chspeed", round(stepper.ch, 5))
    print("RESULT umax", round(float(global_max_abs(u)), 5))


if __name__ == "__main__":
    main()

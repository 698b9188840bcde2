# Overset steady-state solver: each mesh declares itself finished when its own residual drops below
# the tolerance, while the other mesh keeps iterating and waits for the overset exchange
# Source: https://github.com/quinoacomputing/quinoa/issues/613 (port of the Quinoa oversetFE deadlock to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class MeshConfig:
    name: str
    n: int
    cfl: float
    fringe: int = 4


MESHES = [MeshConfig("background", 12, 0.45), MeshConfig("body", 20, 0.3)]


@jax.jit
def pseudo_time_step(u, bc_left, bc_right, cfl):
    padded = jnp.concatenate([bc_left[None], u, bc_right[None]])
    lap = padded[:-2] - 2.0 * u + padded[2:]
    rhs = lap + 0.05 * jnp.sin(jnp.linspace(0.0, jnp.pi, u.shape[0]))
    return u + cfl * rhs, jnp.sqrt(jnp.mean(rhs ** 2))


class OversetFE:
    """One mesh of the overset system; the solution in the fringe comes from the other mesh."""

    def __init__(self, cfg: MeshConfig, tol: float):
        self.cfg, self.tol = cfg, tol
        self.u = jnp.zeros(cfg.n)
        self.m_finished = False
        self.it = 0
        self.fringe_left = jnp.float32(0.0)

    def exchange_fringe(self):
        mine = np.asarray(self.u[-self.cfg.fringe:]).astype(np.float32)
        gathered = np.asarray(multihost_utils.process_allgather(mine))
        other = gathered[1 - jax.process_index()]
        self.fringe_left = jnp.float32(0.5 * float(other.mean()))

    def step(self):
        self.exchange_fringe()
        self.u, residual = pseudo_time_step(self.u, self.fringe_left, jnp.float32(0.0), self.cfg.cfl)
        self.it += 1
        self.diagnostics(float(residual))

    def diagnostics(self, residual):
        self.residual = residual
        if residual < self.tol or self.it >= 2000:
            self.m_finished = True


class Transporter:
    def __init__(self, solver):
        self.solver = solver

    def run(self):
        while not self.solver.m_finished:
            self.solver.step()
        return self.solver


solver = Transporter(OversetFE(MESHES[jax.process_index()], tol=2e-4)).run()
total = multihost_utils.process_allgather(np.float32(jnp.sum(solver.u)))
print("RESULT iterations", solver.it, flush=True)
print("RESULT integral", [round(float(v), 4) for v in np.ravel(total)], flush=True)

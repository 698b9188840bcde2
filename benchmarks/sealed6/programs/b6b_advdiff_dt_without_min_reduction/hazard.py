# Advection-diffusion hierarchy integrator computes the CFL time step from the patches this process
# owns and never reduces it: each process advances its part of the domain with its own dt
# Source: https://github.com/IBAMR/IBAMR/issues/1022 (port of the IBAMR per-processor time step bug to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DX = 1.0 / 64


@dataclass
class Patch:
    x0: float
    n: int = 16
    q: jnp.ndarray = field(default=None)
    u: jnp.ndarray = field(default=None)


@jax.jit
def advect_diffuse(q, u, q_left, q_right, dt, kappa):
    padded = jnp.concatenate([q_left[None], q, q_right[None]])
    upwind = jnp.where(u > 0, padded[1:-1] - padded[:-2], padded[2:] - padded[1:-1])
    lap = padded[:-2] - 2.0 * padded[1:-1] + padded[2:]
    return q - dt / DX * u * upwind + kappa * dt / DX ** 2 * lap


class AdvDiffHierarchyIntegrator:
    def __init__(self, patches, cfl=0.4, kappa=1e-4):
        self.patches, self.cfl, self.kappa = patches, cfl, kappa
        self.time, self.dt_history = 0.0, []

    def get_maximum_time_step_size(self):
        umax = max(float(jnp.max(jnp.abs(p.u))) for p in self.patches)
        dt_adv = self.cfl * DX / umax
        dt_diff = 0.25 * DX ** 2 / self.kappa
        return min(dt_adv, dt_diff)

    def exchange_ghosts(self):
        edges = np.array([float(self.patches[0].q[0]), float(self.patches[-1].q[-1])], np.float32)
        all_edges = np.asarray(multihost_utils.process_allgather(edges))
        pid, n = jax.process_index(), jax.process_count()
        left = all_edges[pid - 1, 1] if pid > 0 else all_edges[n - 1, 1]
        right = all_edges[pid + 1, 0] if pid < n - 1 else all_edges[0, 0]
        return jnp.float32(left), jnp.float32(right)

    def advance_hierarchy(self, dt):
        left, right = self.exchange_ghosts()
        for i, p in enumerate(self.patches):
            ql = left if i == 0 else self.patches[i - 1].q[-1]
            qr = right if i == len(self.patches) - 1 else self.patches[i + 1].q[0]
            p.q = advect_diffuse(p.q, p.u, ql, qr, jnp.float32(dt), self.kappa)
        self.time += dt
        self.dt_history.append(dt)


def make_local_patches():
    patches = []
    for k in range(2):
        x0 = 0.5 * jax.process_index() + 0.25 * k
        x = x0 + DX * (np.arange(16) + 0.5)
        q = np.exp(-((x - 0.3) / 0.05) ** 2).astype(np.float32)
        u = (1.0 + 2.0 * x ** 2).astype(np.float32)  # the flow speeds up towards the outlet
        patches.append(Patch(x0=x0, q=jnp.asarray(q), u=jnp.asarray(u)))
    return patches


integrator = AdvDiffHierarchyIntegrator(make_local_patches())
for step in range(25):
    dt = integrator.get_maximum_time_step_size()
    integrator.advance_hierarchy(dt)
mass = multihost_utils.process_allgather(np.float32(sum(float(jnp.sum(p.q)) for p in integrator.patches) * DX))
print("RESULT time", round(integrator.time, 6), flush=True)
print("RESULT total mass", round(float(np.sum(mass)), 5), flush=True)

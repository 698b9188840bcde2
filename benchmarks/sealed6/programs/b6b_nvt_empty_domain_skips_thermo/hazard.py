# NVT integration method returns early on a rank whose domain holds no particles, skipping the
# thermo reduction the thermostat update performs on every other rank
# Source: https://github.com/glotzerlab/hoomd-blue/issues/95 (port of the HOOMD-blue domain decomposition deadlock to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BOX = 8.0
DT = 0.005


class ParticleData:
    """Particles owned by this rank's slab of the box (domain decomposition along x)."""

    def __init__(self, all_pos, all_vel):
        lo = BOX * jax.process_index() / jax.process_count()
        hi = BOX * (jax.process_index() + 1) / jax.process_count()
        mine = (all_pos[:, 0] >= lo) & (all_pos[:, 0] < hi)
        self.pos = jnp.asarray(all_pos[mine])
        self.vel = jnp.asarray(all_vel[mine])

    def get_n(self):
        return int(self.pos.shape[0])


class ComputeThermo:
    def __init__(self, pdata, n_dof_global):
        self.pdata, self.n_dof = pdata, n_dof_global

    def reduce_properties(self):
        local = np.array([float(jnp.sum(self.pdata.vel ** 2)), self.pdata.get_n()], np.float64)
        return np.sum(multihost_utils.process_allgather(local), axis=0)

    def get_temperature(self):
        two_ke, _ = self.reduce_properties()
        return two_ke / self.n_dof


@jax.jit
def _forces(pos):
    center = jnp.array([BOX / 4, BOX / 2, BOX / 2])
    return -1.5 * (pos - center)


class TwoStepNVT:
    def __init__(self, pdata, thermo, kT, tau):
        self.pdata, self.thermo, self.kT, self.tau = pdata, thermo, kT, tau
        self.xi = 0.0

    def integrate_step_one(self):
        if self.pdata.get_n() == 0:
            return
        p = self.pdata
        scale = float(np.exp(-0.5 * DT * self.xi))
        p.vel = p.vel * scale + 0.5 * DT * _forces(p.pos)
        p.pos = p.pos + DT * p.vel
        self._advance_thermostat()

    def integrate_step_two(self):
        if self.pdata.get_n() == 0:
            return
        p = self.pdata
        p.vel = (p.vel + 0.5 * DT * _forces(p.pos)) * float(np.exp(-0.5 * DT * self.xi))
        self._advance_thermostat()

    def _advance_thermostat(self):
        temp = self.thermo.get_temperature()
        self.xi += DT / (self.tau ** 2) * (temp / self.kT - 1.0)


class Integrator:
    def __init__(self, method):
        self.method = method

    def update(self, timestep):
        self.method.integrate_step_one()
        self.method.integrate_step_two()


rng = np.random.default_rng(3)
n_total = 64
droplet = rng.uniform([0.5, 2.0, 2.0], [3.5, 6.0, 6.0], size=(n_total, 3)).astype(np.float32)
velocities = rng.normal(scale=1.0, size=(n_total, 3)).astype(np.float32)

pdata = ParticleData(droplet, velocities)
thermo = ComputeThermo(pdata, n_dof_global=3 * n_total - 3)
nvt = TwoStepNVT(pdata, thermo, kT=1.2, tau=0.5)
integrator = Integrator(nvt)
for step in range(20):
    integrator.update(step)
print("RESULT T", round(float(thermo.get_temperature()), 4), "xi", round(nvt.xi, 4), flush=True)

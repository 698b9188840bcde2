# Weakly compressible SPH dam break in the style of PySPH: the tank is split into slabs along x, one
# per process; every process integrates its particles and the adaptive time step is agreed on by
# reducing the per-process CFL / force factors over all processes.
import os
from dataclasses import dataclass, field

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TANK_LENGTH, COLUMN_WIDTH, COLUMN_HEIGHT = 4.0, 1.0, 2.0
DX, H, C0, G = 0.1, 0.13, 20.0, 9.81


@dataclass
class ParticleArray:
    name: str
    x: np.ndarray
    y: np.ndarray
    u: np.ndarray = None
    v: np.ndarray = None
    props: dict = field(default_factory=dict)

    def __post_init__(self):
        n = self.x.shape[0]
        self.u = np.zeros(n) if self.u is None else self.u
        self.v = np.zeros(n) if self.v is None else self.v

    def get(self, name):
        return self.props[name]


def create_particles(rank, size):
    xs, ys = np.meshgrid(np.arange(DX / 2, COLUMN_WIDTH, DX), np.arange(DX / 2, COLUMN_HEIGHT, DX))
    wall_x = np.concatenate([np.arange(0, TANK_LENGTH, DX), np.zeros(20), np.full(20, TANK_LENGTH)])
    wall_y = np.concatenate([np.full(int(round(TANK_LENGTH / DX)), -DX), np.arange(20) * DX, np.arange(20) * DX])
    lo, hi = rank * TANK_LENGTH / size, (rank + 1) * TANK_LENGTH / size
    fx, fy = xs.ravel(), ys.ravel()
    mine_f = (fx >= lo) & (fx < hi)
    mine_w = (wall_x >= lo) & (wall_x < hi + (1e-9 if rank == size - 1 else 0))
    fluid = ParticleArray("fluid", fx[mine_f], fy[mine_f])
    fluid.props.update(dt_cfl=np.zeros(mine_f.sum()), dt_force=np.zeros(mine_f.sum()))
    solid = ParticleArray("solid", wall_x[mine_w], wall_y[mine_w])
    return [fluid, solid]


class Integrator:
    def __init__(self, particles, cfl=0.3):
        self.particles = particles
        self.cfl = cfl

    def compute_accelerations(self):
        fluid = self.particles[0]
        depth = COLUMN_HEIGHT - fluid.y
        ax = 0.5 * G * np.clip(depth, 0, None) / COLUMN_HEIGHT
        ay = -G + G * np.clip(depth, 0, None) / COLUMN_HEIGHT
        fluid.props["dt_cfl"] = np.hypot(fluid.u, fluid.v) + C0
        fluid.props["dt_force"] = np.hypot(ax, ay)
        return ax, ay

    def _my_max(self, x):
        if len(x) > 0:
            return np.max(x)
        else:
            return -1.0

    def _get_dt_adapt_factors(self):
        factors = [-1.0, -1.0]
        for pa in self.particles:
            for i, name in enumerate(("dt_cfl", "dt_force")):
                if name in pa.props:
                    max_val = self._my_max(pa.get(name))
                    factors[i] = max(factors[i], max_val)
        return factors

    def compute_time_step(self, dt):
        local = np.array(self._get_dt_adapt_factors(), dtype=np.float32)
        cfl_max, force_max = np.asarray(multihost_utils.process_allgather(local)).max(axis=0)
        dt_cfl = H / cfl_max if cfl_max > 0 else dt
        dt_force = 0.25 * np.sqrt(H / force_max) if force_max > 0 else dt
        return min(self.cfl * dt_cfl, dt_force, dt)

    def step(self, dt):
        fluid = self.particles[0]
        ax, ay = self.compute_accelerations()
        fluid.u += dt * ax
        fluid.v += dt * ay
        fluid.x += dt * fluid.u
        fluid.y = np.maximum(fluid.y + dt * fluid.v, 0.0)


def main():
    rank, size = jax.process_index(), jax.process_count()
    particles = create_particles(rank, size)
    integrator = Integrator(particles)
    t, dt, tf = 0.0, 1e-3, 0.02
    nsteps = 0
    while t < tf:
        integrator.compute_accelerations()
        dt = integrator.compute_time_step(1e-3)
        integrator.step(dt)
        t += dt
        nsteps += 1
    fluid = particles[0]
    stats = np.array([fluid.x.size, fluid.x.sum(), fluid.y.sum()], dtype=np.float32)
    total = np.asarray(multihost_utils.process_allgather(stats)).sum(axis=0)
    print("RESULT steps", nsteps)
    print("RESULT final_time", round(t, 6))
    print("RESULT fluid_particles", int(total[0]))
    print("RESULT mean_x", round(float(total[1] / total[0]), 4))
    print("RESULT mean_y", round(float(total[2] / total[0]), 4))


if __name__ == "__main__":
    main()

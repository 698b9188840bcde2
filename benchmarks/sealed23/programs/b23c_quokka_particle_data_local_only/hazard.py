# Gravity test problem with point-mass particles in an AMR-like code: the particles live on
# the process that owns their part of the domain (the domain is split in x).  After the
# drift-kick steps the problem's analysis routine asks the particle descriptor for the particle
# data and computes the centre of mass and total momentum of the particle system.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TEST_PARTICLES = np.array([
    # x, y, z, mass, vx, vy, vz
    [-0.60, 0.10, 0.00, 0.500, 0.0, 0.30, 0.0],
    [-0.25, -0.40, 0.20, 0.125, 0.1, 0.00, 0.0],
    [-0.80, 0.35, -0.10, 0.125, 0.0, -0.20, 0.1],
    [0.55, -0.05, 0.05, 0.250, 0.0, -0.60, 0.0],
    [0.90, 0.45, -0.30, 0.125, -0.2, 0.00, 0.0],
], dtype=np.float32)


class ParticleContainer:
    def __init__(self, rank, size, lo=-1.0, hi=1.0):
        edges = np.linspace(lo, hi, size + 1)
        x = TEST_PARTICLES[:, 0]
        mine = (x >= edges[rank]) & ((x < edges[rank + 1]) | (rank == size - 1))
        self.data = TEST_PARTICLES[mine].copy()

    def deposit_mass(self):
        local_mass = np.float32(self.data[:, 3].sum())
        return float(np.asarray(multihost_utils.process_allgather(local_mass)).sum())

    def drift_kick(self, dt, g_const=0.5):
        total_mass = self.deposit_mass()
        pos, vel = self.data[:, 0:3], self.data[:, 4:7]
        vel -= dt * g_const * total_mass * pos
        pos += dt * vel


class PhysicsParticleDescriptor:
    def __init__(self, container):
        self.container_ = container

    def getParticleDataAtLevel(self, lev=0):
        return self.container_.data.copy()


@jax.jit
def _com_and_momentum(parts):
    m = parts[:, 3]
    com = jnp.sum(parts[:, 0:3] * m[:, None], axis=0) / jnp.sum(m)
    mom = jnp.sum(parts[:, 4:7] * m[:, None], axis=0)
    return com, mom, jnp.sum(m)


def compute_analysis(descriptor):
    parts = descriptor.getParticleDataAtLevel(0)
    com, mom, mass = _com_and_momentum(jnp.asarray(parts))
    return parts.shape[0], np.asarray(com), np.asarray(mom), float(mass)


def main():
    rank, size = jax.process_index(), jax.process_count()
    container = ParticleContainer(rank, size)
    for _ in range(10):
        container.drift_kick(0.05)
    descriptor = PhysicsParticleDescriptor(container)
    n, com, mom, mass = compute_analysis(descriptor)
    print(f"rank {rank}: {container.data.shape[0]} local particles")
    print("RESULT n_particles", n)
    print("RESULT total_mass", round(mass, 5))
    print("RESULT center_of_mass", np.round(com, 5).tolist())
    print("RESULT momentum", np.round(mom, 5).tolist())


if __name__ == "__main__":
    main()

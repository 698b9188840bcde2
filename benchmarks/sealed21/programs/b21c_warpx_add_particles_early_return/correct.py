# A small 1D electrostatic particle-in-cell driver in the style of pywarpx: each process owns a
# slab of the domain, the Python layer injects a beam through `add_particles`, and the particle
# container redistributes particles to the process that owns their position.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NX = 32
XMIN, XMAX = 0.0, 1.0
DT = 0.02


class ParticleContainer:
    def __init__(self, rank, nprocs):
        self.rank, self.nprocs = rank, nprocs
        width = (XMAX - XMIN) / nprocs
        self.lo, self.hi = XMIN + rank * width, XMIN + (rank + 1) * width
        self.x = np.zeros(0, np.float32)
        self.v = np.zeros(0, np.float32)
        self.w = np.zeros(0, np.float32)

    def add_n_particles(self, x, v, w):
        self.x = np.concatenate([self.x, x.astype(np.float32)])
        self.v = np.concatenate([self.v, v.astype(np.float32)])
        self.w = np.concatenate([self.w, w.astype(np.float32)])
        self.redistribute()

    def redistribute(self):
        counts = np.asarray(multihost_utils.process_allgather(np.int32(self.x.size)))
        cap = int(counts.max())
        buf = np.full((3, cap), np.nan, np.float32)
        buf[:, :self.x.size] = np.stack([self.x, self.v, self.w])
        everything = np.asarray(multihost_utils.process_allgather(buf)).transpose(1, 0, 2).reshape(3, -1)
        everything = everything[:, ~np.isnan(everything[0])]
        x = np.mod(everything[0] - XMIN, XMAX - XMIN) + XMIN
        mine = (x >= self.lo) & (x < self.hi)
        self.x, self.v, self.w = x[mine], everything[1][mine], everything[2][mine]


def add_particles(container, x, v, w):
    """Python-level injection wrapper (like _libwarpx.add_particles)."""
    x, v, w = np.atleast_1d(x), np.atleast_1d(v), np.atleast_1d(w)
    container.add_n_particles(x, v, w)


@jax.jit
def deposit_and_push(x, v, w, rho_global):
    cell = jnp.clip(((x - XMIN) / (XMAX - XMIN) * NX).astype(jnp.int32), 0, NX - 1)
    efield = -jnp.cumsum(rho_global - rho_global.mean()) / NX
    v = v + DT * efield[cell]
    return x + DT * v, v


def local_density(pc):
    cell = np.clip(((pc.x - XMIN) / (XMAX - XMIN) * NX).astype(np.int32), 0, NX - 1)
    return np.bincount(cell, weights=pc.w, minlength=NX).astype(np.float32)


def beam_source(step, rank, pc):
    """Inject a few macro-particles per step at the right-hand emitter, on the owning process."""
    rng = np.random.default_rng(100 + step)
    xs = rng.uniform(0.8, 0.95, size=4).astype(np.float32)
    owned = (xs >= pc.lo) & (xs < pc.hi)
    xs = xs[owned]
    return xs, np.full(xs.size, -0.5, np.float32), np.full(xs.size, 0.1, np.float32)


def main():
    rank, nprocs = jax.process_index(), jax.process_count()
    pc = ParticleContainer(rank, nprocs)
    rng = np.random.default_rng(7)
    x0 = rng.uniform(XMIN, XMAX, size=64).astype(np.float32)
    keep = (x0 >= pc.lo) & (x0 < pc.hi)
    add_particles(pc, x0[keep], np.zeros(keep.sum()), np.ones(keep.sum()))

    for step in range(6):
        add_particles(pc, *beam_source(step, rank, pc))
        rho = np.asarray(multihost_utils.process_allgather(local_density(pc))).sum(0)
        x, v = deposit_and_push(jnp.asarray(pc.x), jnp.asarray(pc.v), jnp.asarray(pc.w), jnp.asarray(rho))
        pc.x, pc.v = np.asarray(x), np.asarray(v)
        pc.redistribute()

    total = np.asarray(multihost_utils.process_allgather(np.float32(pc.w.sum()))).sum()
    counts = np.asarray(multihost_utils.process_allgather(np.int32(pc.x.size)))
    print(f"rank {rank}: {pc.x.size} particles")
    print("RESULT total_weight", round(float(total), 4))
    print("RESULT particles", int(counts.sum()))


if __name__ == "__main__":
    main()

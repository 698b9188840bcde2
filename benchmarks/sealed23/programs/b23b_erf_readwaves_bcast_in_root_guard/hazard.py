# ERF-style atmosphere model coupled to a wave model (WW3, MPMD). One ERF process (this_root)
# exchanges with the wave model; the received significant wave height and wavelength fields are
# shared with every ERF process, put into a single-box MultiFab and ParallelCopy'd into the
# distributed Hwave / Lwave fields that each process uses for its own tiles.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NX, NY = 8, 6


class OneBoxMultiFab:
    """A MultiFab with one box covering the domain, owned by process `owner`."""

    def __init__(self, owner, ncomp):
        self.owner = owner
        self.data = np.zeros((ncomp, NX, NY), np.float32)

    def boxes(self, myproc):
        return [0] if myproc == self.owner else []


def ww3_recv(step):
    """Stand-in for the MPMD receive from the wave model (only this_root talks to WW3)."""
    x = np.linspace(0, 1, NX)[:, None]
    y = np.linspace(0, 1, NY)[None, :]
    hs = 1.0 + 0.5 * np.sin(2 * np.pi * (x + 0.1 * step)) * np.cos(np.pi * y)
    lm = 40.0 + 5.0 * x + 0 * y
    return np.stack([hs, lm]).astype(np.float32)


def parallel_copy(src, myproc, nprocs):
    """Copy the single-box data into the distributed field: each process keeps its x-slab."""
    contrib = src.data if myproc == src.owner else np.zeros_like(src.data)
    full = np.asarray(multihost_utils.process_allgather(contrib)).sum(0)
    return np.array_split(full, nprocs, axis=1)[myproc]


class ERF:
    def __init__(self, myproc, nprocs, this_root=0):
        self.myproc, self.nprocs, self.this_root = myproc, nprocs, this_root
        self.waves_onegrid = OneBoxMultiFab(owner=this_root, ncomp=2)
        self.hwave = self.lwave = None

    def read_waves(self, step):
        if self.myproc == self.this_root:
            buffer = ww3_recv(step)
            for _ in self.waves_onegrid.boxes(self.myproc):
                buffer = np.asarray(multihost_utils.broadcast_one_to_all(buffer))
                self.waves_onegrid.data[:] = buffer
        local = parallel_copy(self.waves_onegrid, self.myproc, self.nprocs)
        self.hwave, self.lwave = local[0], local[1]

    def wave_stress(self):
        k = 2 * jnp.pi / jnp.asarray(self.lwave)
        return float(jnp.sum(0.5 * jnp.asarray(self.hwave) ** 2 * k))


def main():
    myproc, nprocs = jax.process_index(), jax.process_count()
    erf = ERF(myproc, nprocs)
    total = 0.0
    for step in range(3):
        erf.read_waves(step)
        local = np.float32(erf.wave_stress())
        total += float(np.asarray(multihost_utils.process_allgather(local)).sum())
    print(f"process {myproc}: hwave tile {erf.hwave.shape}")
    print("RESULT wave_stress", round(total, 4))


if __name__ == "__main__":
    main()

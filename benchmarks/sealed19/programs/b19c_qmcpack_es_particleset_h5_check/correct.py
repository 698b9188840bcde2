# QMC setup: ion particle set initialised from the orbital file that only the head task opens (QMCPACK style, ported to JAX)
# Source: https://github.com/QMCPACK/qmcpack/pull/182
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
import shutil
import sys
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MAX_IONS = 8


class Communicate:
    def rank(self):
        return jax.process_index()

    def bcast(self, array):
        return np.asarray(multihost_utils.broadcast_one_to_all(np.asarray(array)))

    def barrier(self, tag):
        multihost_utils.sync_global_devices(tag)


def APP_ABORT(where):
    print(f"Fatal Error. Aborting at {where}", file=sys.stderr, flush=True)
    sys.exit(1)


def write_eshdf(path):
    """Stand-in for the converter output (pw2qmcpack): ion species, charges and positions."""
    positions = np.array([[0.0, 0.0, 0.0], [1.7, 1.7, 1.7], [3.4, 0.0, 3.4], [0.0, 3.4, 3.4]])
    np.savez(path, atomic_numbers=np.array([3, 1, 3, 1]), positions=positions)


class ESHDFIonsParser:
    def __init__(self, h5, comm):
        self.h5, self.comm = h5, comm

    def put(self):
        buf = np.zeros((MAX_IONS, 5))
        if self.comm.rank() == 0:
            n = len(self.h5["atomic_numbers"])
            buf[:n, 0] = 1.0
            buf[:n, 1] = self.h5["atomic_numbers"]
            buf[:n, 2:] = self.h5["positions"]
        buf = self.comm.bcast(buf)
        mask = buf[:, 0] > 0
        return buf[mask, 1], buf[mask, 2:]


class ParticleSetPool:
    def __init__(self, comm):
        self.comm = comm

    def create_es_particle_set(self, h5name):
        h5 = -1
        if self.comm.rank() == 0:
            h5 = np.load(h5name) if os.path.exists(h5name) else -1
            if isinstance(h5, int) and h5 < 0:
                print(f'Could not open HDF5 file "{h5name}" in ParticleSetPool::createESParticleSet.', file=sys.stderr)
                APP_ABORT("ParticleSetPool::createESParticleSet")
        return ESHDFIonsParser(h5, self.comm).put()


@jax.jit
def ion_ion_energy(charges, positions):
    diff = positions[:, None, :] - positions[None, :, :]
    dist = jnp.sqrt(jnp.sum(diff ** 2, axis=-1) + jnp.eye(positions.shape[0]))
    pair = charges[:, None] * charges[None, :] / dist
    return 0.5 * jnp.sum(pair * (1.0 - jnp.eye(positions.shape[0])))


def main():
    comm = Communicate()
    workdir = os.path.join(tempfile.gettempdir(), f"qmc_{os.environ.get('JOB_ID', 'run')}")
    h5name = os.path.join(workdir, "LiH.pwscf.npz")
    if comm.rank() == 0:
        os.makedirs(workdir, exist_ok=True)
        write_eshdf(h5name)
    comm.barrier("eshdf_written")
    charges, positions = ParticleSetPool(comm).create_es_particle_set(h5name)
    energy = float(ion_ion_energy(jnp.asarray(charges), jnp.asarray(positions)))
    print("RESULT num_ions", len(charges))
    print("RESULT ion_ion_energy", round(energy, 6))
    if comm.rank() == 0:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

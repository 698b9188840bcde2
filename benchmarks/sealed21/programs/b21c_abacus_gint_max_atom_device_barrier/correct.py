# A small ABACUS-style LCAO grid integration: the real-space grid of a surface slab is split
# into z-planes over the processes, each process integrates the local potential V_loc over the
# atoms in its big cells (on the accelerator when device == "gpu"), and the Hamiltonian
# contributions are summed over all processes.
import os
import socket
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

INPUT = {"device": "gpu", "nbz": 8, "bxyz": 16, "rcut": 1.2, "nlocal": 6}
ATOM_Z = np.array([4.9, 5.4, 6.3, 7.1, 5.8, 6.7])  # slab in the upper half, vacuum below


def set_device_by_rank():
    """Bind this process to a device: node-local rank from the hostnames of all processes."""
    host = np.int32(zlib.crc32(socket.gethostname().encode()) & 0x7FFFFFFF)
    hosts = np.asarray(multihost_utils.process_allgather(host))
    local_rank = int(np.sum(hosts[:jax.process_index()] == host))
    return jax.local_devices()[local_rank % len(jax.local_devices())]


class GridTechnique:
    def __init__(self, rank, nprocs):
        nbz_local = INPUT["nbz"] // nprocs
        self.nbz_start = rank * nbz_local
        self.zs = np.arange(self.nbz_start, self.nbz_start + nbz_local) + 0.5
        # atoms whose orbitals reach each local big cell
        self.atoms_in_bigcell = [np.flatnonzero(np.abs(ATOM_Z - z) < INPUT["rcut"]) for z in self.zs]
        self.max_atom = max((len(a) for a in self.atoms_in_bigcell), default=0)


@jax.jit
def _gint_vl_kernel(z_cells, atom_z, mask):
    r = z_cells[:, None] - atom_z[None, :]
    phi = jnp.exp(-r ** 2) * mask
    vloc = -1.0 / (1.0 + jnp.abs(z_cells - 5.5))
    return jnp.einsum("ca,c,cb->ab", phi, vloc, phi)


class GintK:
    def __init__(self, gt):
        self.gt = gt

    def gint_vl_gpu(self, hvl, device):
        mask = np.zeros((len(self.gt.zs), len(ATOM_Z)), np.float32)
        for i, atoms in enumerate(self.gt.atoms_in_bigcell):
            mask[i, atoms] = 1.0
        args = [jax.device_put(np.asarray(a, np.float32), device) for a in (self.gt.zs, ATOM_Z, mask)]
        hvl += np.asarray(_gint_vl_kernel(*args))
        return hvl

    def cal_gint_vlocal(self):
        hvl = np.zeros((INPUT["nlocal"], INPUT["nlocal"]), np.float32)
        if INPUT["device"] == "gpu":
            device = set_device_by_rank()
            if self.gt.max_atom > 0:
                hvl = self.gint_vl_gpu(hvl, device)
        return hvl


def main():
    rank, nprocs = jax.process_index(), jax.process_count()
    gt = GridTechnique(rank, nprocs)
    gint = GintK(gt)
    hvl_local = gint.cal_gint_vlocal()
    hvl = np.asarray(multihost_utils.process_allgather(hvl_local)).sum(0)
    eig = np.linalg.eigvalsh(0.5 * (hvl + hvl.T))
    print(f"rank {rank}: max_atom {gt.max_atom}")
    print("RESULT trace_Hvl", round(float(np.trace(hvl)), 5))
    print("RESULT lowest_eigs", np.round(eig[:3], 5).tolist())


if __name__ == "__main__":
    main()

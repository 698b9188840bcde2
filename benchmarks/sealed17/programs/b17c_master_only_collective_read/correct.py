# Crystal structure generation: every rank calls the collective molecule reader; the master alone writes the input
# Source: https://github.com/Yi5817/Genarris/pull/20
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MAX_ATOMS, STRUCTS_PER_RANK = 16, 4
XYZ = "3\nwater\nO 0.000 0.000 0.117\nH 0.000 0.757 -0.467\nH 0.000 -0.757 -0.467\n"


def parallel_read(path):
    """Like ase.io.read under MPI: the master parses the file and broadcasts it, so every rank must call it."""
    pos = np.zeros((MAX_ATOMS, 3), np.float32)
    n = np.int32(0)
    if jax.process_index() == 0:
        lines = Path(path).read_text().splitlines()
        n = np.int32(int(lines[0]))
        pos[:n] = [[float(v) for v in ln.split()[1:4]] for ln in lines[2:2 + n]]
    n = int(multihost_utils.broadcast_one_to_all(n))
    pos = np.asarray(multihost_utils.broadcast_one_to_all(pos))
    return pos[:n]


def broadcast_molecule(mol):
    padded = np.zeros((MAX_ATOMS, 3), np.float32)
    if mol is not None:
        padded[:len(mol)] = mol
    out = np.asarray(multihost_utils.broadcast_one_to_all(padded))
    return out[np.any(out != 0.0, axis=1)]


@jax.jit
def lattice_energy(cells, mol):
    """Pairwise repulsion between the molecule and its periodic images, one energy per trial cell."""
    images = mol[None, :, None, :] + cells[:, None, None, :] - mol[None, None, :, :]
    r2 = jnp.sum(images ** 2, axis=-1) + 1e-3
    return jnp.sum(1.0 / r2 ** 3, axis=(1, 2))


def main():
    rank = jax.process_index()
    workdir = Path(tempfile.gettempdir()) / "mcjax_sealed17_master_only_collective_read" / os.environ.get("JOB_ID", "0")
    mol = None
    if rank == 0:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "molecule.xyz").write_text(XYZ)
    mol = parallel_read(workdir / "molecule.xyz")
    mol = broadcast_molecule(mol)

    mesh = Mesh(np.array(jax.devices()), ("structs",))
    rng = np.random.default_rng(11 + rank)
    cells = rng.uniform(2.5, 4.0, size=(STRUCTS_PER_RANK, 3)).astype(np.float32)
    cells = jax.make_array_from_process_local_data(NamedSharding(mesh, P("structs")), cells)
    energies = np.asarray(multihost_utils.process_allgather(lattice_energy(cells, jnp.asarray(mol)), tiled=True))
    print("RESULT n_atoms", len(mol))
    print("RESULT best_structure", int(np.argmin(energies)), round(float(energies.min()), 5))


if __name__ == "__main__":
    main()

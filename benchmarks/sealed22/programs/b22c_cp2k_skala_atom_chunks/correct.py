# Native-grid learned XC functional (SKALA-like) inside a small SCF driver.  The grid points are
# distributed over ranks; with NATIVE_GRID_ATOM_CHUNKS the per-atom feature rows are routed to the
# rank that owns the atom chunk, the model runs there, and the chunk energies are summed.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {"NATIVE_GRID_ATOM_CHUNKS": True, "CHUNK_ATOMS": 4, "MAX_SCF": 3, "MAX_ROWS": 96}
WATER = np.array([[0.0, 0.0, 0.0], [0.757, 0.586, 0.0], [-0.757, 0.586, 0.0]])
N_FEAT = 4


def make_native_grid(coords, rank, size, pts_per_atom=40):
    """Atom-centred grid; the points are dealt round-robin to the ranks."""
    rng = np.random.default_rng(11)
    pts, atom = [], []
    for a, c in enumerate(coords):
        pts.append(c + rng.normal(scale=0.6, size=(pts_per_atom, 3)))
        atom.append(np.full(pts_per_atom, a))
    pts, atom = np.concatenate(pts)[rank::size], np.concatenate(atom)[rank::size]
    return pts, atom


def atom_chunks(natoms, chunk_atoms, size):
    chunks = [list(range(i, min(i + chunk_atoms, natoms))) for i in range(0, natoms, chunk_atoms)]
    return {ic: (chunk, ic % size) for ic, chunk in enumerate(chunks)}


@jax.jit
def skala_model(feats, w):
    h = jnp.tanh(feats @ w["w1"])
    return -jnp.exp(h @ w["w2"])[:, 0] * feats[:, 0] ** (4.0 / 3.0)


def features(pts, density_scale):
    r = np.linalg.norm(pts, axis=1, keepdims=True)
    rho = density_scale * np.exp(-r)
    return np.concatenate([rho, rho * r, rho ** 2, np.ones_like(rho)], axis=1).astype(np.float32)


def gather_rows(feats, atom):
    block = np.zeros((CONFIG["MAX_ROWS"], N_FEAT + 1), np.float32)
    block[:, -1] = -1
    block[: len(feats), :N_FEAT], block[: len(feats), -1] = feats, atom
    return np.asarray(multihost_utils.process_allgather(block)).reshape(-1, N_FEAT + 1)


def exc_replicated(feats, atom, weights):
    rows = gather_rows(feats, atom)
    rows = rows[rows[:, -1] >= 0]
    return float(jnp.sum(skala_model(rows[:, :N_FEAT], weights)))


def exc_atom_chunks(feats, atom, weights, my_chunks):
    rows = gather_rows(feats, atom)
    e_local = 0.0
    for chunk in my_chunks:
        sel = np.isin(rows[:, -1], chunk)
        e_local += float(jnp.sum(skala_model(rows[sel, :N_FEAT], weights)))
    return float(np.asarray(multihost_utils.process_allgather(np.float64(e_local))).sum())


def qs_vxc_create(pts, atom, density_scale, weights, chunks, rank):
    feats = features(pts, density_scale)
    my_chunks = [chunk for chunk, owner in chunks.values() if owner == rank]
    if CONFIG["NATIVE_GRID_ATOM_CHUNKS"]:
        return exc_atom_chunks(feats, atom, weights, my_chunks)
    return exc_replicated(feats, atom, weights)


def main():
    rank, size = jax.process_index(), jax.process_count()
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    weights = {"w1": 0.3 * jax.random.normal(k1, (N_FEAT, 8)), "w2": 0.3 * jax.random.normal(k2, (8, 1))}
    pts, atom = make_native_grid(WATER, rank, size)
    chunks = atom_chunks(len(WATER), CONFIG["CHUNK_ATOMS"], size)
    density_scale, energies = 1.0, []
    for it in range(CONFIG["MAX_SCF"]):
        exc = qs_vxc_create(pts, atom, density_scale, weights, chunks, rank)
        energies.append(exc)
        density_scale = 0.5 * density_scale + 0.5 * (1.0 + 0.01 * exc)
    print(f"rank {rank}: {len(pts)} grid points, chunks owned {[c for c, (ch, o) in chunks.items() if o == rank]}")
    for it, e in enumerate(energies):
        print(f"RESULT scf {it} E_xc {e:.6f}")


if __name__ == "__main__":
    main()

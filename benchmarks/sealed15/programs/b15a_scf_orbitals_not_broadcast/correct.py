# Fermionic VMC setup: every process runs the SCF, then the orbitals of process 0 are broadcast so all share one sign gauge
# Source: https://github.com/netket/netket/pull/2178
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class MoleculeConfig:
    n_basis: int = 6
    n_orbitals: int = 4            # active space
    field: float = 0.3             # strength of the external-field term
    samples_per_process: int = 16
    scf_iters: int = 300
    seed: int = 11


def build_integrals(cfg):
    """Core Hamiltonian and field operator in the AO basis (identical on every process)."""
    rng = np.random.default_rng(cfg.seed)
    q, _ = np.linalg.qr(rng.normal(size=(cfg.n_basis, cfg.n_basis)))
    h_core = q @ np.diag(np.linspace(4.0, 0.5, cfg.n_basis)) @ q.T
    dip = rng.normal(size=(cfg.n_basis, cfg.n_basis))
    return h_core, 0.5 * (dip + dip.T)


def run_scf(h_core, n_orb, guess_rng, iters):
    """Subspace iteration from a random guess; the sign of each converged orbital follows the guess."""
    c = guess_rng.normal(size=(h_core.shape[0], n_orb))
    for _ in range(iters):
        q, r = np.linalg.qr(h_core @ c)
        c = q * np.sign(np.diag(r))                    # sign-preserving orthonormalisation
    return c


def from_molecule(cfg, sampler_rng):
    h_core, dip = build_integrals(cfg)
    mo_coeff = run_scf(h_core, cfg.n_orbitals, sampler_rng, cfg.scf_iters)
    mo_coeff = np.asarray(multihost_utils.broadcast_one_to_all(mo_coeff))
    t_mo = mo_coeff.T @ (h_core + cfg.field * dip) @ mo_coeff
    return t_mo.astype(np.float32)


@jax.jit
def energy_and_grad(theta, t_mo, x):
    def energy(th):
        amp = jnp.tanh(x * th)                         # (N, n_orb) occupation amplitudes
        e_loc = jnp.einsum("ni,ij,nj->n", amp, t_mo, amp)
        return jnp.mean(e_loc)
    return jax.value_and_grad(energy)(theta)


def main():
    cfg = MoleculeConfig()
    rank = jax.process_index()
    sampler_rng = np.random.default_rng(cfg.seed + 1000 * (rank + 1))   # per-rank sampler stream
    t_mo = from_molecule(cfg, sampler_rng)

    mesh = Mesh(np.array(jax.devices()), ("chains",))
    theta = jnp.full((cfg.n_orbitals,), 0.5, jnp.float32)
    energies = []
    for step in range(4):
        local = sampler_rng.choice([-1.0, 1.0], size=(cfg.samples_per_process, cfg.n_orbitals))
        x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("chains")), local.astype(np.float32))
        e, g = energy_and_grad(theta, t_mo, x)
        theta = theta - 0.1 * g
        energies.append(round(float(e), 5))
    x_ref = jnp.ones((1, cfg.n_orbitals), jnp.float32)             # Hartree-Fock reference occupation
    e_ref, _ = energy_and_grad(theta, t_mo, x_ref)
    print("RESULT energies", energies)
    print("RESULT theta", np.round(np.asarray(theta), 5).tolist())
    print("RESULT reference_energy", round(float(e_ref), 5))


if __name__ == "__main__":
    main()

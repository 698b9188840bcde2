# Domain-parallel geometry relaxation: one system's atoms sharded over processes, FIRE-like descent with a convergence hook
# Source: https://github.com/NVIDIA/nvalchemi-toolkit/pull/150
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ATOMS_PER_RANK = 64
MAX_STEPS = 600
FMAX = 0.01
SPRING_K, BOND = 1.0, 1.0


@dataclass
class DomainParallelConfig:
    mesh: Mesh
    num_graphs: int = 1  # a single system is split across ranks


def bond_lengths(x):
    d = jnp.roll(x, -1) - x
    return d.at[-1].add(x.shape[0] * BOND)  # periodic cell of length N * BOND


@jax.jit
def chain_forces(x):
    stretch = bond_lengths(x) - BOND
    return SPRING_K * (stretch - jnp.roll(stretch, 1))


@jax.jit
def descent_update(x, v, f, dt):
    v = 0.9 * v + dt * f
    return x + dt * v, v


class FIREDynamics:
    def __init__(self, dt=0.2, convergence_hook=None):
        self.dt = dt
        self.convergence_hook = convergence_hook

    def step(self, x, v):
        f = chain_forces(x)
        x, v = descent_update(x, v, f, self.dt)
        return x, v, f


def fmax_convergence_hook(local_forces, num_graphs):
    """Indices of the systems whose largest local force is below FMAX, or None if none converged here."""
    fmax = float(np.abs(local_forces).max())
    return np.arange(num_graphs) if fmax < FMAX else None


class DomainParallel:
    def __init__(self, dynamics, config):
        self._dynamics, self._config = dynamics, config

    def run(self, x):
        dyn = self._dynamics
        v = jnp.zeros_like(x)
        for step in range(1, MAX_STEPS + 1):
            x, v, f = dyn.step(x, v)
            local_f = np.asarray(f.addressable_shards[0].data)
            converged = dyn.convergence_hook(local_f, self._config.num_graphs) if dyn.convergence_hook else None
            if dyn.convergence_hook is not None and self._config.mesh is not None:
                # every rank reduces a per-system mask: a system counts as converged only if all ranks report it
                mask = np.zeros(self._config.num_graphs, np.int32)
                if converged is not None:
                    mask[converged] = 1
                mask = np.asarray(multihost_utils.process_allgather(mask)).min(axis=0)
                converged = np.flatnonzero(mask) if mask.any() else None
            if converged is not None:
                return x, step
        return x, MAX_STEPS


def initial_positions(mesh):
    """Relaxed chain; the atoms owned by the last rank start compressed (strained region)."""
    rank, size = jax.process_index(), jax.process_count()
    idx = rank * ATOMS_PER_RANK + np.arange(ATOMS_PER_RANK)
    x = idx * BOND
    if rank == size - 1:
        x = x - 8.0 * np.sin(np.pi * np.arange(ATOMS_PER_RANK) / ATOMS_PER_RANK)
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("atoms")), x.astype(np.float32))


def main():
    mesh = Mesh(np.array(jax.devices()), ("atoms",))
    config = DomainParallelConfig(mesh=mesh)
    driver = DomainParallel(FIREDynamics(dt=0.2, convergence_hook=fmax_convergence_hook), config)
    x, steps = driver.run(initial_positions(mesh))
    energy = jax.jit(lambda x: 0.5 * SPRING_K * jnp.sum((bond_lengths(x) - BOND) ** 2))(x)
    print("RESULT relax_steps", steps)
    print("RESULT final_energy", round(float(energy), 6))


if __name__ == "__main__":
    main()

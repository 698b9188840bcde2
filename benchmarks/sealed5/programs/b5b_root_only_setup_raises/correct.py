# relentless-style state-point sweep (JAX port): for every state point the root process packs the
# initial particle configuration, the configuration is broadcast, and all processes run the short
# simulation whose ensemble averages drive the optimization.
# Source: https://github.com/mphowardlab/relentless/issues/221
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("rank",))
N_PARTICLES = 16


@dataclasses.dataclass
class StatePoint:
    name: str
    phi: float          # volume fraction
    T: float


class InitializeRandomly:
    def __init__(self, seed, diameter=1.0, max_attempts=400):
        self.seed = seed
        self.diameter = diameter
        self.max_attempts = max_attempts

    def _pack_particles(self, phi):
        """Random sequential addition; gives up when the box is too crowded."""
        rng = np.random.default_rng(self.seed)
        box = (N_PARTICLES * np.pi * self.diameter**2 / 4 / phi) ** 0.5
        positions = []
        for _ in range(self.max_attempts):
            trial = rng.uniform(0, box, 2)
            if all(np.linalg.norm(trial - p) >= self.diameter for p in positions):
                positions.append(trial)
                if len(positions) == N_PARTICLES:
                    return np.array(positions, np.float32), np.float32(box)
        raise RuntimeError(f"Unable to pack {N_PARTICLES} particles at phi={phi}")

    def __call__(self, state):
        positions, box = np.zeros((N_PARTICLES, 2), np.float32), np.float32(0)
        ok = np.int32(1)
        if jax.process_index() == 0:
            try:
                positions, box = self._pack_particles(state.phi)
            except RuntimeError:
                ok = np.int32(0)
        # the root's outcome travels with the configuration, so every rank fails together
        ok, positions, box = multihost_utils.broadcast_one_to_all((ok, positions, box))
        if not int(ok):
            raise RuntimeError(f"Unable to pack {N_PARTICLES} particles at phi={state.phi}")
        return positions, box


@jax.jit
def pair_energy(x, box):
    d = x[:, None, :] - x[None, :, :]
    d = d - box * jnp.round(d / box)
    r2 = jnp.sum(d * d, -1) + jnp.eye(x.shape[0])
    return jnp.sum(jnp.where(r2 < 4.0, 1.0 / r2**6, 0.0)) / 2


class Simulation:
    def __init__(self, initializer, steps=3):
        self.initializer = initializer
        self.steps = steps
        self._mean = jax.jit(lambda e: jnp.mean(e), out_shardings=NamedSharding(MESH, P()))

    def run(self, state):
        positions, box = self.initializer(state)
        energies = []
        rng = np.random.default_rng(jax.process_index())
        x = np.asarray(positions)
        for _ in range(self.steps):
            x = (x + rng.normal(0, 0.01, x.shape).astype(np.float32)) % box
            energies.append(float(pair_energy(x, box)))
        local = np.array([np.mean(energies)], np.float32)
        arr = jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)
        return float(self._mean(arr))             # ensemble average over ranks


def main():
    sim = Simulation(InitializeRandomly(seed=7))
    states = [StatePoint("dilute", 0.05, 1.0), StatePoint("dense", 0.85, 1.0),
              StatePoint("medium", 0.2, 1.5)]
    for state in states:
        try:
            u = sim.run(state)
        except RuntimeError as e:
            print(f"RESULT {state.name} skipped: {e}")
            continue
        print(f"RESULT {state.name} <U> {u:.4f}")


if __name__ == "__main__":
    main()

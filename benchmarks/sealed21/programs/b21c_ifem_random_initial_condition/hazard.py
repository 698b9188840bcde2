# A small IFEM-style Boussinesq (heat) driver: the temperature solution vector is held in full
# on every process, each process advances the nodes of its own partition with a jitted update,
# and the owned parts are gathered back into the full vector after every step.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {
    "nx": 16, "ny": 16, "dt": 0.0005, "steps": 8, "Ra": 1.0e3,
    "initialcondition": {"field": "T", "type": "expression", "function": "1-y", "perturbation": 0.01},
}


class InitialCondition:
    def __init__(self, cfg):
        self.function = cfg["function"]
        self.perturbation = cfg["perturbation"]

    def evaluate(self, x, y):
        base = eval(self.function, {"x": x, "y": y, "np": np})
        noise = np.random.default_rng().uniform(-1.0, 1.0, size=np.shape(x))
        return (base + self.perturbation * noise).astype(np.float32)


class SIMBoussinesq:
    def __init__(self, cfg):
        self.cfg = cfg
        self.nx, self.ny = cfg["nx"], cfg["ny"]
        self.rank, self.nprocs = jax.process_index(), jax.process_count()
        rows = self.ny // self.nprocs
        self.row0, self.row1 = self.rank * rows, (self.rank + 1) * rows
        self.ic = InitialCondition(cfg["initialcondition"])
        self.solution = None
        self._advance = jax.jit(self._advance_impl)

    def setInitialConditions(self):
        ys, xs = np.meshgrid(np.linspace(0, 1, self.ny), np.linspace(0, 1, self.nx), indexing="ij")
        self.solution = self.ic.evaluate(xs, ys)

    def _advance_impl(self, T, row0):
        h = 1.0 / (self.nx - 1)
        lap = (jnp.roll(T, 1, 0) + jnp.roll(T, -1, 0) + jnp.roll(T, 1, 1) + jnp.roll(T, -1, 1) - 4 * T) / h ** 2
        buoy = self.cfg["Ra"] * 1e-4 * (T - T.mean()) * jnp.gradient(T, axis=0)
        T_new = T + self.cfg["dt"] * (lap - buoy)
        T_new = T_new.at[0].set(1.0).at[-1].set(0.0)
        rows = self.row1 - self.row0
        return jax.lax.dynamic_slice_in_dim(T_new, row0, rows, axis=0)

    def solveStep(self):
        owned = np.asarray(self._advance(jnp.asarray(self.solution), self.row0))
        parts = np.asarray(multihost_utils.process_allgather(owned))
        self.solution = parts.reshape(self.ny, self.nx)

    def energy(self):
        return float(np.sum(self.solution.astype(np.float64) ** 2) / self.solution.size)


def main():
    sim = SIMBoussinesq(CONFIG)
    sim.setInitialConditions()
    e0 = sim.energy()
    for _ in range(CONFIG["steps"]):
        sim.solveStep()
    e = sim.energy()
    check = np.asarray(multihost_utils.process_allgather(np.float32(e)))
    print(f"rank {sim.rank}: initial energy {e0:.6f}")
    print("RESULT final_energy", f"{e:.6f}", "replicas_equal", bool(np.all(check == check[0])))
    print("RESULT relative_energy", f"{e / e0:.6f}")


if __name__ == "__main__":
    main()

# Melt-front diffusion: after each step the processes agree whether the constraints changed anywhere, unconditionally
# Source: https://github.com/geodynamics/aspect/pull/3047
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
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
class SolverConfig:
    nodes_per_process: int = 8
    steps: int = 6
    dt: float = 0.2
    melt_temperature: float = 0.3


MESH = Mesh(np.array(jax.devices()), ("x",))
NODES = NamedSharding(MESH, P("x"))


@jax.jit
def diffusion_step(u, scale, dt):
    lap = jnp.roll(u, 1) + jnp.roll(u, -1) - 2.0 * u
    return u + dt * scale * lap


@jax.jit
def assemble_scaling(mask):
    # constrained (molten) nodes diffuse at half rate; normalised by the global number of them
    return 1.0 - 0.5 * mask / (1.0 + jnp.sum(mask))


class MeltSolver:
    def __init__(self, cfg):
        self.cfg = cfg
        local = np.zeros(cfg.nodes_per_process, np.float32)
        if jax.process_index() == 0:
            local[2] = 1.0  # the heat source sits in process 0's part of the mesh
        self.u = jax.make_array_from_process_local_data(NODES, local)
        self.constrained = np.zeros(0, np.int64)
        self.rebuilds = 0
        self.rebuild()

    def local_values(self):
        return np.asarray(self.u.addressable_data(0))

    def rebuild(self):
        mask = np.zeros(self.cfg.nodes_per_process, np.float32)
        mask[self.constrained] = 1.0
        self.scale = assemble_scaling(jax.make_array_from_process_local_data(NODES, mask))
        self.rebuilds += 1

    def constraints_changed(self, new):
        local_diff = np.int32(len(new) != len(self.constrained) or np.any(new != self.constrained))
        return bool(multihost_utils.process_allgather(local_diff).any())

    def run(self):
        for _ in range(self.cfg.steps):
            new = np.flatnonzero(self.local_values() > self.cfg.melt_temperature)
            if self.constraints_changed(new):
                self.constrained = new
                self.rebuild()
            self.u = diffusion_step(self.u, self.scale, self.cfg.dt)
        return self.u


def main():
    solver = MeltSolver(SolverConfig())
    u = solver.run()
    total = float(jax.jit(jnp.sum)(u))
    print("RESULT heat_total", round(total, 5))
    print("RESULT rebuilds", solver.rebuilds)


if __name__ == "__main__":
    main()

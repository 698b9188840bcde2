# Molecular-dynamics run loop that stops at a wall-time limit measured on each process's own clock
# Source: https://github.com/glotzerlab/hoomd-blue/pull/1193
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class RunConfig:
    particles_per_process: int = 16
    dt: float = 0.005
    steps_per_chunk: int = 20
    end_step: int = 4000
    walltime_limit_s: float = 1.6
    chunk_sleep_s: float = 0.12   # stands in for the cost of one run() chunk on a real system


MESH = Mesh(np.array(jax.devices()), ("p",))
PARTICLES = NamedSharding(MESH, P("p"))


@jax.jit
def run_chunk(x, v, dt):
    def body(_, state):
        x, v = state
        force = -x + 0.1 * (jnp.mean(x) - x)   # mean over all particles couples the processes
        v = v + dt * force
        return x + dt * v, v
    return jax.lax.fori_loop(0, RunConfig.steps_per_chunk, body, (x, v))


kinetic_energy = jax.jit(lambda v: 0.5 * jnp.sum(v * v))


def load_initial_snapshot(cfg):
    # the snapshot file is parsed by the root rank before the simulation object exists
    time.sleep(0.8)
    rng = np.random.default_rng(7)
    return rng.normal(size=(cfg.particles_per_process * jax.process_count(),)).astype(np.float32)


class Simulation:
    def __init__(self, cfg, snapshot):
        self.cfg = cfg
        self.t_start = time.time()
        full = multihost_utils.broadcast_one_to_all(snapshot)
        n = cfg.particles_per_process
        local = np.asarray(full)[jax.process_index() * n:(jax.process_index() + 1) * n]
        self.x = jax.make_array_from_process_local_data(PARTICLES, local)
        self.v = jax.make_array_from_process_local_data(PARTICLES, np.zeros(n, np.float32))
        self.timestep = 0

    def walltime(self):
        return time.time() - self.t_start

    def run(self):
        self.x, self.v = run_chunk(self.x, self.v, self.cfg.dt)
        time.sleep(self.cfg.chunk_sleep_s)
        self.timestep += self.cfg.steps_per_chunk


def main():
    cfg = RunConfig()
    n_total = cfg.particles_per_process * jax.process_count()
    snapshot = np.zeros(n_total, np.float32)
    if jax.process_index() == 0:
        snapshot = load_initial_snapshot(cfg)
    sim = Simulation(cfg, snapshot)
    while sim.timestep < cfg.end_step:
        sim.run()
        if sim.walltime() >= cfg.walltime_limit_s:
            break
    ke = float(kinetic_energy(sim.v))
    print("RESULT final_timestep", sim.timestep)
    print("RESULT kinetic_energy", round(ke, 5))


if __name__ == "__main__":
    main()

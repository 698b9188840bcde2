# Monte-Carlo box-resize updater seeded from a per-process value (the process id) instead of one job-wide seed
# Source: https://github.com/glotzerlab/hoomd-blue/issues/233
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import math
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
class BoxMCConfig:
    particles_per_process: int = 32
    box_length: float = 10.0
    pressure: float = 1.5
    kT: float = 1.0
    max_delta_volume: float = 40.0
    sweeps: int = 25


MESH = Mesh(np.array(jax.devices()), ("p",))
PARTICLES = NamedSharding(MESH, P("p", None))


@jax.jit
def soft_energy(frac, box_length):
    # pair-free soft confinement energy of the scaled configuration, summed over every process's particles
    r = frac * box_length
    return jnp.sum(jnp.exp(-jnp.sum((r - 0.5 * box_length) ** 2, axis=-1) / box_length))


class BoxMC:
    """Trial volume moves; every process must draw the same trial and the same acceptance."""

    def __init__(self, cfg, seed):
        self.cfg = cfg
        self.rng = np.random.default_rng(seed)
        self.accepted = 0

    def sweep(self, frac, box_length):
        cfg = self.cfg
        volume = box_length ** 3
        new_volume = volume + self.rng.uniform(-cfg.max_delta_volume, cfg.max_delta_volume)
        if new_volume <= 0.0:
            return box_length
        new_length = new_volume ** (1.0 / 3.0)
        n = frac.shape[0]
        du = float(soft_energy(frac, new_length)) - float(soft_energy(frac, box_length))
        arg = -(du + cfg.pressure * (new_volume - volume)) / cfg.kT + n * math.log(new_volume / volume)
        if self.rng.random() < math.exp(min(0.0, arg)):
            self.accepted += 1
            return new_length
        return box_length


def user_seed():
    # job scripts often derive the seed from something at hand: the pid, the time, the job id
    return os.getpid() % 65536


def main():
    cfg = BoxMCConfig()
    rng = np.random.default_rng(1234)
    full = rng.uniform(size=(cfg.particles_per_process * jax.process_count(), 3)).astype(np.float32)
    n = cfg.particles_per_process
    local = full[jax.process_index() * n:(jax.process_index() + 1) * n]
    frac = jax.make_array_from_process_local_data(PARTICLES, local)
    seed = user_seed()
    updater = BoxMC(cfg, seed)
    box_length = cfg.box_length
    for _ in range(cfg.sweeps):
        box_length = updater.sweep(frac, box_length)
    print("RESULT accepted_moves", updater.accepted)
    print("RESULT box_length", round(box_length, 5))


if __name__ == "__main__":
    main()

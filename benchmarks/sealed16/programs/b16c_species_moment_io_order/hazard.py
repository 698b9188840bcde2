# Vlasov diagnostics: each rank walks its species table in its own order and gathers per-species moments collectively
# Source: https://github.com/ammarhakim/gkyl-archive/issues/39
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Species:
    name: str
    charge: float
    mass: float
    particles: np.ndarray = field(repr=False)       # (n, 2): position, velocity on this rank's sub-domain


@dataclass
class AppConfig:
    species: tuple = (("elc", -1.0, 1.0), ("ion", 1.0, 25.0))
    nbins: int = 8
    nframes: int = 3


def load_local_species(cfg, rank, nproc):
    """Particles of this rank's slab of the domain; the plasma is denser in electrons on the left."""
    rng = np.random.default_rng(100 + rank)
    counts = {"elc": 400 - 300 * rank, "ion": 150 + 100 * rank}
    table = {}
    # the table is filled busiest species first (the rank's own load order)
    for name, charge, mass in sorted(cfg.species, key=lambda s: -counts[s[0]]):
        n = counts[name]
        x = rng.uniform(rank / nproc, (rank + 1) / nproc, size=n)
        v = rng.normal(scale=1.0 / np.sqrt(mass), size=n)
        table[name] = Species(name, charge, mass, np.stack([x, v], axis=1))
    return table


def push(sp, dt):
    sp.particles[:, 0] = (sp.particles[:, 0] + dt * sp.particles[:, 1]) % 1.0


def density_moment(sp, nbins):
    hist, _ = np.histogram(sp.particles[:, 0], bins=nbins, range=(0.0, 1.0))
    return hist.astype(np.float32) * abs(sp.charge)


def write_frame(species, cfg, frame):
    """Collective output: every rank contributes each species' density moment to the global field."""
    out = {}
    for name, sp in species.items():
        local = density_moment(sp, cfg.nbins)
        gathered = multihost_utils.process_allgather(local)   # (nproc, nbins)
        out[name] = np.asarray(gathered).sum(axis=0)
    return out


def main():
    cfg = AppConfig()
    rank, nproc = jax.process_index(), jax.process_count()
    species = load_local_species(cfg, rank, nproc)
    totals = {}
    for frame in range(cfg.nframes):
        for sp in species.values():
            push(sp, dt=0.01)
        moments = write_frame(species, cfg, frame)
        for name in sorted(moments):
            totals.setdefault(name, []).append(float(moments[name].sum()))
    for name in sorted(totals):
        print("RESULT", name, totals[name])


if __name__ == "__main__":
    main()

# PIC particle diagnostic: per-species gathers are issued while looping over a dict whose key order is built per rank
# Source: https://github.com/fbpic/fbpic/pull/56
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NBINS = 8
# macroparticles of each species in each rank's z-slab (the ion bunch sits in rank 1's slab)
LOCAL_COUNT = {0: {"electrons": 96, "ions": 24}, 1: {"electrons": 40, "ions": 88}}
CHARGE = {"electrons": -1.0, "ions": 2.0}


class Species:
    def __init__(self, name, n, rank):
        rng = np.random.default_rng(100 * rank + len(name))
        self.name, self.q = name, CHARGE[name]
        self.z = rng.uniform(rank * 10.0, rank * 10.0 + 10.0, size=n).astype(np.float32)
        self.uz = rng.normal(1.0 if name == "electrons" else 0.1, 0.2, size=n).astype(np.float32)


class Simulation:
    def __init__(self, rank):
        counts = LOCAL_COUNT[rank]
        # the pusher handles the locally largest species first (better cache reuse)
        order = sorted(counts, key=counts.get, reverse=True)
        self.species = {name: Species(name, counts[name], rank) for name in order}

    @staticmethod
    @jax.jit
    def push(uz, dt):
        return uz + dt * 0.05 * jnp.tanh(uz)

    def step(self, dt):
        for sp in self.species.values():
            sp.uz = np.asarray(self.push(sp.uz, dt))
            sp.z = sp.z + dt * sp.uz


class ParticleDiagnostic:
    def __init__(self, species_dict):
        self.species_dict = species_dict
        self.species_names_list = sorted(species_dict)

    def local_histogram(self, sp):
        h, _ = np.histogram(sp.uz, bins=NBINS, range=(-1.0, 3.0), weights=np.full(sp.uz.shape, sp.q))
        return h.astype(np.float32)

    def write(self):
        out = {}
        for name in self.species_dict.keys():
            sp = self.species_dict[name]
            gathered = multihost_utils.process_allgather(self.local_histogram(sp))
            out[name] = np.asarray(gathered).sum(axis=0)
        return out


def main():
    rank = jax.process_index()
    sim = Simulation(rank)
    diag = ParticleDiagnostic(sim.species)
    mesh = Mesh(np.array(jax.devices()), ("z",))
    for _ in range(3):
        sim.step(0.5)
    n_local = np.array([sum(len(sp.z) for sp in sim.species.values())], np.int32)
    total = jax.jit(jnp.sum)(jax.make_array_from_process_local_data(NamedSharding(mesh, P("z")), n_local))
    print("RESULT total_macroparticles", int(total))
    hist = diag.write()
    for name in sorted(hist):
        print("RESULT charge_hist", name, np.round(hist[name], 3).tolist())


if __name__ == "__main__":
    main()

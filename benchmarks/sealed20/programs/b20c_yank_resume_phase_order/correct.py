# Resume a batch of alchemical free-energy calculations (YANK-style) from a store directory: every
# phase is a replica-exchange run whose replicas are spread over the MPI-like processes.
import json
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

LIGANDS = {"benzene": 1.2, "toluene": 1.9, "phenol": 2.6}
STATES = {"complex": 6, "solvent": 4}


def store_directory():
    return os.path.join(tempfile.gettempdir(), f"yank-store-{os.environ.get('JOB_ID', 'local')}")


def write_previous_run(store):
    """What an interrupted earlier run left behind: one storage file and checkpoint per phase."""
    os.makedirs(store, exist_ok=True)
    for ligand, strength in LIGANDS.items():
        for phase, n_states in STATES.items():
            name = f"{phase}_{ligand}"
            meta = {"n_states": n_states + (1 if ligand == "phenol" else 0), "iteration": 2,
                    "coupling": strength * (1.5 if phase == "complex" else 1.0)}
            with open(os.path.join(store, name + ".nc"), "w") as f:
                json.dump(meta, f)
            with open(os.path.join(store, name + ".nc.checkpoint"), "w") as f:
                f.write("checkpoint_interval=1\n")


def find_phases_in_store_directory(store):
    names = {fname.split(".")[0] for fname in os.listdir(store) if ".nc" in fname}
    return {name: os.path.join(store, name + ".nc") for name in names}


class ReplicaExchange:
    def __init__(self, path):
        with open(path) as f:
            meta = json.load(f)
        self.n_states, self.coupling = meta["n_states"], meta["coupling"]
        self.lambdas = np.linspace(0.0, 1.0, self.n_states)

    def reduced_potentials(self, replica, iteration):
        rng = np.random.default_rng(1000 * iteration + replica)
        x = rng.normal(size=32)
        return np.array([np.sum((1 - lam) * x ** 2 + lam * self.coupling * (x - 1) ** 2) / 32
                         for lam in self.lambdas])

    def run_iteration(self, iteration):
        rank, size = jax.process_index(), jax.process_count()
        u_kl = np.zeros((self.n_states, self.n_states), dtype=np.float32)
        for replica in range(rank, self.n_states, size):
            u_kl[replica] = self.reduced_potentials(replica, iteration)
        return np.asarray(multihost_utils.process_allgather(u_kl)).sum(axis=0)


def free_energy(u_kln):
    u = np.mean(u_kln, axis=0)
    return float(np.sum(np.diff(np.diag(u))))


class Yank:
    def __init__(self, store):
        self._store_directory = store

    def resume(self, iterations=3):
        phases = find_phases_in_store_directory(self._store_directory)
        self._phases = sorted(phases.keys())
        results = {}
        for phase in self._phases:
            sampler = ReplicaExchange(phases[phase])
            u_kln = np.stack([sampler.run_iteration(it) for it in range(2, 2 + iterations)])
            results[phase] = free_energy(u_kln)
        return results


def main():
    store = store_directory()
    if jax.process_index() == 0:
        write_previous_run(store)
    multihost_utils.sync_global_devices("store directory ready")
    results = Yank(store).resume()
    for ligand in LIGANDS:
        dg = results[f"complex_{ligand}"] - results[f"solvent_{ligand}"]
        print(f"RESULT dG_bind_{ligand}", round(dg, 3))


if __name__ == "__main__":
    main()

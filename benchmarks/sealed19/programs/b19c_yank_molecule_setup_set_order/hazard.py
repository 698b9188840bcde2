# Free-energy experiment builder: molecules are set up in parallel over processes (YANK style, ported to JAX)
# Source: https://github.com/choderalab/yank/pull/850
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SCRIPT = {
    "molecules": {
        "t4-lysozyme": {"filepath": "input/181L-pdbfixer.pdb"},
        "p-xylene": {"filepath": "input/p-xylene.mol2", "antechamber": {"charge_method": "bcc"}},
        "benzene": {"filepath": "input/benzene.mol2", "antechamber": {"charge_method": "bcc"}},
        "toluene": {"filepath": "input/toluene.mol2", "antechamber": {"charge_method": "bcc"}},
        "ethylbenzene": {"filepath": "input/ethylbenzene.mol2", "antechamber": {"charge_method": "bcc"}},
        "indole": {"filepath": "input/indole.mol2", "antechamber": {"charge_method": "bcc"}},
        "imatinib": {"filepath": "input/STI.mol2", "antechamber": {"charge_method": "bcc"}},
        "abl-kinase": {"filepath": "input/2HYY-pdbfixer.pdb"},
    },
    "experiments": [
        {"receptor": "t4-lysozyme", "ligands": ["p-xylene", "benzene", "toluene", "ethylbenzene", "indole"]},
        {"receptor": "abl-kinase", "ligands": ["imatinib"]},
    ],
}


def molecule_features(mol_id, n_atoms=12):
    rng = np.random.default_rng(zlib.crc32(mol_id.encode()))
    return rng.normal(size=(n_atoms, 3)).astype(np.float32)


@jax.jit
def net_charge_estimate(coords):
    centered = coords - coords.mean(axis=0)
    return jnp.sum(jnp.tanh(centered @ jnp.array([0.3, -0.2, 0.1])))


class ExperimentBuilder:
    def __init__(self, script):
        self.molecules = script["molecules"]
        self.experiments = script["experiments"]

    def _molecules_to_setup(self):
        mol_ids = set()
        for exp in self.experiments:
            mol_ids.add(exp["receptor"])
            mol_ids.update(exp["ligands"])
        return list(mol_ids)

    def setup_molecules(self):
        rank, size = jax.process_index(), jax.process_count()
        mol_ids = self._molecules_to_setup()
        per_node = -(-len(mol_ids) // size)
        local = np.zeros(per_node, dtype=np.float32)
        for i, mol_id in enumerate(mol_ids[rank::size]):
            local[i] = float(net_charge_estimate(molecule_features(mol_id)))
        gathered = np.asarray(multihost_utils.process_allgather(local))
        charges = {}
        for node in range(size):
            for i, mol_id in enumerate(mol_ids[node::size]):
                charges[mol_id] = float(gathered[node, i])
        return charges


def main():
    builder = ExperimentBuilder(SCRIPT)
    charges = builder.setup_molecules()
    print("RESULT n_molecules", len(charges))
    for mol_id in sorted(charges):
        print("RESULT charge", mol_id, round(charges[mol_id], 4))


if __name__ == "__main__":
    main()

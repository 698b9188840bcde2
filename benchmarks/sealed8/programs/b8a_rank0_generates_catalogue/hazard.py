# Only process 0 regenerates a missing equation catalogue, but the generator runs collectives inside
# Source: https://github.com/DeaglanBartlett/ESR/pull/57 (port of an mpi4py bug to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import json
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WORK_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed8_esr", os.environ.get("JOB_ID", "local"))


class DuplicateChecker:
    """Splits the candidate equations over processes and keeps the unique ones (ESR's generation step)."""

    def __init__(self, basis: str, out_dir: str):
        self.basis = basis
        self.out_dir = out_dir

    def _candidates(self, comp: int) -> np.ndarray:
        rng = np.random.default_rng(1000 + comp)
        return rng.integers(0, 5 * comp, size=(8 * comp,)).astype(np.int32)

    def run(self, comp: int) -> int:
        eqs = self._candidates(comp)
        mine = np.array_split(eqs, jax.process_count())[jax.process_index()]
        local_unique = np.unique(mine)
        padded = np.full(eqs.shape, -1, np.int32)
        padded[:local_unique.size] = local_unique
        gathered = multihost_utils.process_allgather(padded)
        unique = np.unique(gathered[gathered >= 0])
        if jax.process_index() == 0:
            os.makedirs(os.path.join(self.out_dir, f"compl_{comp}"), exist_ok=True)
            with open(os.path.join(self.out_dir, f"compl_{comp}", f"unique_equations_{comp}.txt"), "w") as f:
                f.write("\n".join(str(int(e)) for e in unique))
        return int(unique.size)


class ShapeLikelihood:
    def __init__(self, run_name: str, base_out_dir: str):
        self.fn_dir = os.path.join(base_out_dir, run_name)

    def catalogue_file(self, comp: int) -> str:
        return os.path.join(self.fn_dir, f"compl_{comp}", f"unique_equations_{comp}.txt")

    def load(self, comp: int) -> np.ndarray:
        with open(self.catalogue_file(comp)) as f:
            return np.array([int(x) for x in f.read().split()], np.int32)


def main(comp: int = 3) -> None:
    probe = ShapeLikelihood("core_maths", WORK_DIR)
    checker = DuplicateChecker("core_maths", probe.fn_dir)
    if jax.process_index() == 0:
        if not os.path.isfile(probe.catalogue_file(comp)):
            for c in range(1, comp + 1):
                checker.run(c)
    multihost_utils.sync_global_devices("catalogue_ready")

    sizes = [int(probe.load(c).size) for c in range(1, comp + 1)]
    total = multihost_utils.process_allgather(np.array(sizes, np.int32))
    print("RESULT catalogue_sizes", json.dumps(sizes))
    print("RESULT agreed", bool(np.all(total == total[0])))


main()

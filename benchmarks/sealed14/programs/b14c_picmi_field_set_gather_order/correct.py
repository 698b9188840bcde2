# PIC field diagnostic loops over the requested field names in a fixed order and gathers each field to all processes
# Source: https://github.com/fbpic/fbpic/pull/588
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"nz_per_rank": 24, "nr": 8, "period": 5, "n_steps": 10,
       "picmi_fields": ["E", "B", "J", "rho"]}
PICMI_TO_FBPIC = {"E": ["Er", "Et", "Ez"], "B": ["Br", "Bt", "Bz"], "J": ["Jr", "Jt", "Jz"], "rho": ["rho"]}


class LocalGrid:
    """This process's z-slab of an (r, z) quasi-cylindrical grid."""

    def __init__(self, rank):
        nz = CFG["nz_per_rank"]
        z = (np.arange(nz) + rank * nz)[None, :] * 0.1
        r = (np.arange(CFG["nr"]) + 0.5)[:, None] * 0.1
        self.fields = {}
        for k, name in enumerate(sorted(n for names in PICMI_TO_FBPIC.values() for n in names)):
            self.fields[name] = np.cos(z * (k + 1) * 0.3) * np.exp(-r ** 2 * (k + 1))

    def push(self, step):
        for k, name in enumerate(sorted(self.fields)):
            self.fields[name] = self.fields[name] * (1.0 - 0.01 * (k + 1)) + 0.001 * step


class FieldDiagnostic:
    def __init__(self, picmi_fields):
        fieldtypes = set()
        for f in picmi_fields:
            fieldtypes.update(PICMI_TO_FBPIC[f])
        self.fieldtypes = sorted(fieldtypes)
        self.written = {}

    def write(self, grid, step):
        for name in self.fieldtypes:
            gathered = np.asarray(multihost_utils.process_allgather(grid.fields[name]))
            full = np.concatenate(list(gathered), axis=1)  # (nr, nz_total)
            self.written.setdefault(name, []).append(float(np.sum(full * np.arange(full.shape[1]))))


def main():
    grid = LocalGrid(jax.process_index())
    diag = FieldDiagnostic(CFG["picmi_fields"])
    for step in range(1, CFG["n_steps"] + 1):
        grid.push(step)
        if step % CFG["period"] == 0:
            diag.write(grid, step)
    for name in sorted(diag.written):
        print("RESULT field", name, [round(v, 5) for v in diag.written[name]])


main()

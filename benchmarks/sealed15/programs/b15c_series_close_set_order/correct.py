# File-based diagnostics series: the open per-iteration files are kept in a set and closed (a collective each) in sorted order at the end
# Source: https://github.com/openPMD/openPMD-api/pull/838
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import json
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WORK = os.path.join(tempfile.gettempdir(), "mcjax_sealed15_series_close", os.environ.get("JOB_ID", "job"))
CFG = {"pattern": "diag_%06T.bp", "iterations": [0, 50, 100, 150, 200, 250, 300, 350], "cells": 64}


class Engine:
    """One output file; closing it writes the footer, which needs every process's block table."""

    def __init__(self, path):
        self.path, self.blocks = path, []

    def put(self, name, data):
        self.blocks.append((name, int(data.size), float(np.sum(data))))

    def close(self):
        local = np.asarray([sum(b[1] for b in self.blocks), sum(b[2] for b in self.blocks)], np.float64)
        table = np.asarray(multihost_utils.process_allgather(local))
        footer = {"elements": int(table[:, 0].sum()), "checksum": round(float(table[:, 1].sum()), 6)}
        if jax.process_index() == 0:
            with open(self.path + ".footer.json", "w") as fh:
                json.dump(footer, fh)
        return footer


class Series:
    def __init__(self, directory):
        self.directory, self.engines, self.open_files = directory, {}, set()

    def engine_for(self, iteration):
        path = os.path.join(self.directory, CFG["pattern"].replace("%06T", f"{iteration:06d}"))
        if path not in self.engines:
            self.engines[path] = Engine(path)
            self.open_files.add(path)
        return self.engines[path]

    def close(self):
        footers = {}
        for path in sorted(self.open_files):
            footers[os.path.basename(path)] = self.engines[path].close()
        self.open_files.clear()
        return footers


def main():
    rank = jax.process_index()
    os.makedirs(WORK, exist_ok=True)
    series = Series(WORK)
    x = (np.arange(CFG["cells"]) + rank * CFG["cells"]) / (2.0 * CFG["cells"])
    for it in CFG["iterations"]:
        t = it * 1e-3
        eng = series.engine_for(it)
        eng.put("E_x", np.sin(2 * np.pi * (x - t)))
        n_part = 10 + (it // 50) * (rank + 1)
        eng.put("particles_x", np.linspace(0.0, 1.0, n_part) + t)
    footers = series.close()
    for name in sorted(footers):
        print("RESULT", name, footers[name]["elements"], footers[name]["checksum"])


main()

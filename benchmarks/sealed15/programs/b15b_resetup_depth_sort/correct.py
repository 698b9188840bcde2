# Model re-setup after a config change: subsystems needing new variable sizes are sorted by depth and name, then sizes are exchanged
# Source: https://github.com/OpenMDAO/OpenMDAO/pull/1765
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MAX_VARS = 3
# subsystem path -> (owning process, local variable sizes on the owner)
HIERARCHY = {
    "model.cycle.d1": (0, [4, 2, 0]),
    "model.cycle.d2": (1, [3, 3, 1]),
    "model.obj_cmp": (0, [1, 0, 0]),
    "model.con_cmp": (1, [2, 2, 0]),
    "model.cycle.solver_aux": (0, [5, 0, 0]),
    "model.px": (1, [6, 1, 0]),
}


def depth(path):
    return path.count(".")


class ParallelModel:
    def __init__(self, rank):
        self.rank = rank
        self.var_sizes = {}

    def visit_order(self):
        """Local subsystems are visited first, then the remote ones this process only holds stubs for."""
        local = [p for p, (owner, _) in HIERARCHY.items() if owner == self.rank]
        remote = [p for p, (owner, _) in HIERARCHY.items() if owner != self.rank]
        return local + remote

    def needs_resetup(self, changed_prefix):
        hits = dict.fromkeys((p, depth(p)) for p in self.visit_order() if p.startswith(changed_prefix))
        return sorted(hits, key=lambda item: (item[1], item[0]))

    def local_sizes(self, path):
        owner, sizes = HIERARCHY[path]
        return np.array(sizes if owner == self.rank else [0] * MAX_VARS, np.int32)

    def setup_var_data(self, path):
        gathered = multihost_utils.process_allgather(self.local_sizes(path))
        self.var_sizes[path] = np.asarray(gathered).sum(axis=0).tolist()

    def resetup(self, changed_prefix):
        for path, _depth in self.needs_resetup(changed_prefix):
            self.setup_var_data(path)
        multihost_utils.sync_global_devices("resetup done")


def total_offsets(var_sizes):
    offsets, off = {}, 0
    for path in sorted(var_sizes):
        offsets[path] = off
        off += sum(var_sizes[path])
    return offsets, off


def main():
    model = ParallelModel(jax.process_index())
    model.resetup("model")
    offsets, total = total_offsets(model.var_sizes)
    for path in sorted(model.var_sizes):
        print(f"RESULT {path} sizes {model.var_sizes[path]} offset {offsets[path]}")
    print("RESULT total", total)


if __name__ == "__main__":
    main()

# FE output writer imports ghost values on every process before the cell loop, even on a process owning no cells
# Source: https://github.com/dealii/dealii/pull/19279
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"n_cells": 1, "dofs_per_cell": 4, "n_blocks": 2, "subdivisions": 2}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def allreduce(values):
    local = np.asarray(values, np.float64)[None, :]
    glob = jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)
    return np.asarray(_sum(glob))


class Triangulation:
    """Cells are dealt out round-robin; with more processes than cells some own none."""

    def __init__(self, rank, nranks):
        self.owned = [c for c in range(CFG["n_cells"]) if c % nranks == rank]


class BlockVector:
    """Distributed solution: each block is stored on the process that owns its dofs."""

    def __init__(self, tria, rank):
        self.rank = rank
        n = CFG["dofs_per_cell"]
        self.blocks = [{c: np.linspace(0.0, 1.0, n) * (b + 1) + c for c in tria.owned}
                       for b in range(CFG["n_blocks"])]

    def import_elements(self):
        """ReadWriteVector import: every process contributes its owned entries (a collective)."""
        n = CFG["dofs_per_cell"]
        full = []
        for blk in self.blocks:
            local = np.zeros((CFG["n_cells"], n))
            for c, vals in blk.items():
                local[c] = vals
            full.append(np.asarray(multihost_utils.process_allgather(local)).sum(axis=0))
        return full


class DataOut:
    def __init__(self, tria, vec):
        self.tria, self.vec = tria, vec
        self.imported = None

    def build_patches(self):
        patches = []
        if self.imported is None:
            self.imported = self.vec.import_elements()
        for cell in self.tria.owned:
            vals = [blk[cell] for blk in self.imported]
            for s in range(CFG["subdivisions"]):
                patches.append(np.mean([v[s::CFG["subdivisions"]] for v in vals]))
        return patches

    def write_summary(self):
        patches = self.build_patches()
        n_total, value_sum = allreduce([len(patches), float(np.sum(patches))])
        return int(n_total), float(value_sum)


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    tria = Triangulation(rank, nranks)
    out = DataOut(tria, BlockVector(tria, rank))
    n_patches, total = out.write_summary()
    print("RESULT patches", n_patches)
    print("RESULT patch_value_sum", round(total, 6))


main()

# Micro-simulation manager gathers every rank's micro-simulation data with per-rank counts (a variable-size all-gather)
# Source: https://github.com/precice/micro-manager/pull/81
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class ManagerConfig:
    macro_bounds: tuple = (0.0, 1.0)
    n_macro_vertices: int = 8
    similarity_tol: float = 0.05
    n_windows: int = 3


def macro_mesh(cfg):
    # the macro vertices are clustered near the left boundary (a refined region)
    s = np.linspace(0.0, 1.0, cfg.n_macro_vertices)
    return cfg.macro_bounds[0] + (cfg.macro_bounds[1] - cfg.macro_bounds[0]) * s ** 1.6


def decompose(coords, rank, size, cfg):
    lo, hi = cfg.macro_bounds
    width = (hi - lo) / size
    box_lo, box_hi = lo + rank * width, lo + (rank + 1) * width
    upper = coords <= box_hi if rank == size - 1 else coords < box_hi
    return coords[(coords >= box_lo) & upper]


class MicroSimulation:
    def __init__(self, x):
        self.x = x
        self.k = 1.0 + 0.5 * np.sin(3.0 * x)

    def solve(self, macro_temp, dt):
        self.k = self.k + dt * (macro_temp - self.k) * 0.1
        return np.array([self.k, self.k * macro_temp], np.float32)


class MicroManager:
    def __init__(self, cfg):
        self.cfg = cfg
        rank, size = jax.process_index(), jax.process_count()
        self.local_coords = decompose(macro_mesh(cfg), rank, size, cfg)
        self.sims = [MicroSimulation(x) for x in self.local_coords]

    def gather_global(self, local_data):
        # every rank needs all micro data for global adaptivity; ranks hold different numbers of sims,
        # so gather the counts first, pad to the largest, gather, and drop the padding (an Allgatherv)
        counts = np.asarray(multihost_utils.process_allgather(np.int32(local_data.shape[0])))
        padded = np.zeros((int(counts.max()), local_data.shape[-1]), local_data.dtype)
        padded[:local_data.shape[0]] = local_data
        gathered = np.asarray(multihost_utils.process_allgather(padded))
        return np.concatenate([gathered[r, :counts[r]] for r in range(len(counts))])

    def global_adaptivity(self, all_data):
        # a micro simulation is inactive when an earlier (lower global id) one is similar to it
        active = np.ones(all_data.shape[0], bool)
        for i in range(all_data.shape[0]):
            for j in range(i):
                if active[j] and np.abs(all_data[i] - all_data[j]).max() < self.cfg.similarity_tol:
                    active[i] = False
                    break
        return active

    def run(self):
        active_counts = []
        for w in range(self.cfg.n_windows):
            macro_temp = 1.0 + 0.1 * w
            local = np.stack([s.solve(macro_temp, 0.5) for s in self.sims]).astype(np.float32)
            all_data = self.gather_global(local)
            active_counts.append(int(self.global_adaptivity(all_data).sum()))
        return active_counts, all_data


def main():
    cfg = ManagerConfig()
    manager = MicroManager(cfg)
    active_counts, all_data = manager.run()
    print("RESULT n_micro_sims", all_data.shape[0])
    print("RESULT active_per_window", active_counts)
    print("RESULT data_checksum", round(float(all_data.sum()), 4))


if __name__ == "__main__":
    main()

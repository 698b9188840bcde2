# Port of a deal.II bug: ParticleHandler::insert_particles(positions) returns early on a process
# that inserts no particles, before update_cached_numbers(), which is collective.
# Source: https://github.com/dealii/dealii/issues/12724
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Triangulation:
    """A 1D distributed mesh of [0, 1): each process owns one contiguous slab of cells."""

    def __init__(self, n_cells: int):
        self.n_cells = n_cells
        per = n_cells // jax.process_count()
        self.owned = range(jax.process_index() * per, (jax.process_index() + 1) * per)

    def find_active_cell(self, x: float) -> int:
        return min(int(x * self.n_cells), self.n_cells - 1)


class ParticleHandler:
    def __init__(self, tria: Triangulation):
        self.tria = tria
        self.particles: dict[int, tuple[int, float]] = {}  # id -> (cell, position)
        self.next_free_id = 0
        self.global_number_of_particles = 0
        self.global_max_particles_per_cell = 0

    def update_cached_numbers(self) -> None:
        local = np.array([len(self.particles), self._max_per_cell()], np.int32)
        gathered = np.asarray(multihost_utils.process_allgather(local))
        self.global_number_of_particles = int(gathered[:, 0].sum())
        self.global_max_particles_per_cell = int(gathered[:, 1].max())
        self.next_free_id = self.global_number_of_particles

    def _max_per_cell(self) -> int:
        cells = [c for c, _ in self.particles.values()]
        return max((cells.count(c) for c in set(cells)), default=0)

    def insert_particles(self, positions: list[float]) -> None:
        cells = [self.tria.find_active_cell(x) for x in positions]
        if len(cells) != 0:  # fix from the issue: no early return; the update below is collective
            for x, cell in zip(positions, cells):
                if cell in self.tria.owned:
                    self.particles[self.next_free_id + len(self.particles)] = (cell, x)
        self.update_cached_numbers()

    def n_global_particles(self) -> int:
        return self.global_number_of_particles


tria = Triangulation(n_cells=8)
handler = ParticleHandler(tria)
# Each process seeds particles only in the cells where its injector lies; process 1 has none.
seeds = [0.05, 0.15, 0.15, 0.35] if jax.process_index() == 0 else []
handler.insert_particles(seeds)
pos_sum = sum(x for _, x in handler.particles.values())
total_pos = float(np.sum(multihost_utils.process_allgather(np.float32(pos_sum))))
print(f"RESULT n_global_particles {handler.n_global_particles()}")
print(f"RESULT max_per_cell {handler.global_max_particles_per_cell}")
print(f"RESULT position_sum {total_pos:.3f}")

# Port of an OPAL bug: Ring::apply, called for each local particle, saves the loss data set (an
# allreduce) when a particle leaves the ring, while the tracker's deleteParticle does its own allreduce.
# Source: https://github.com/OPALX-project/OPAL/issues/969
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class LossDataSink:
    def __init__(self, name: str):
        self.name = name
        self.local: list[tuple[int, float]] = []
        self.saved_total = 0

    def add_particle(self, pid: int, r: float) -> None:
        self.local.append((pid, r))

    def save(self) -> None:
        """Collective: agree on the number of lost particles and write them out (rank 0)."""
        counts = np.asarray(multihost_utils.process_allgather(np.int32(len(self.local))))
        self.saved_total = int(counts.sum())


class Ring:
    def __init__(self, r_max: float):
        self.r_max = r_max
        self.loss_ds = LossDataSink("RING")

    def apply(self, pid: int, pos: np.ndarray) -> bool:
        r = float(np.hypot(pos[0], pos[1]))
        if r > self.r_max:
            self.loss_ds.add_particle(pid, r)
            return True
        return False

    def finalise(self) -> None:
        self.loss_ds.save()  # fix from the issue: save the loss data set once, on every process


class ParallelCyclotronTracker:
    def __init__(self, ring: Ring, bunch: dict[int, np.ndarray]):
        self.ring = ring
        self.bunch = bunch

    def delete_particle(self, lost: set[int]) -> int:
        for pid in lost:
            del self.bunch[pid]
        flag_need_update = bool(np.any(multihost_utils.process_allgather(np.int32(bool(lost)))))
        if flag_need_update:  # repartition the bunch after losses
            return int(np.sum(multihost_utils.process_allgather(np.int32(len(self.bunch)))))
        return -1

    def execute(self, turns: int) -> int:
        total = -1
        for _ in range(turns):
            lost = set()
            for pid, pos in self.bunch.items():
                pos *= 1.05  # the orbit grows each turn
                if self.ring.apply(pid, pos):
                    lost.add(pid)
            n = self.delete_particle(lost)
            total = n if n >= 0 else total
        self.ring.finalise()
        return total


# Each process tracks its own share of the bunch; process 0's share starts further out.
rng = np.random.default_rng(7)
radii = (0.80 if jax.process_index() == 0 else 0.60) + 0.02 * np.arange(6)
angles = rng.uniform(0.0, 2 * np.pi, 6)
bunch = {jax.process_index() * 100 + i: np.array([r * np.cos(a), r * np.sin(a)])
         for i, (r, a) in enumerate(zip(radii, angles))}
tracker = ParallelCyclotronTracker(Ring(r_max=1.0), bunch)
alive = tracker.execute(turns=4)
print(f"RESULT alive_after_turns {alive}")
print(f"RESULT lost_saved {tracker.ring.loss_ds.saved_total}")

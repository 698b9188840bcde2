# Port of an FDS bug: in PROC_HVAC a loop restricted to the processes that own a mesh hits an input
# ERROR and RETURNs, so that process never reaches the MPI_ALLREDUCE after the loop.
# Source: https://github.com/firemodels/fds/pull/8698
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Vent:
    name: str
    mesh: int
    area: float
    attached_to_obst: bool


@dataclass
class SimConfig:
    n_meshes: int
    vents: list

    def process_of_mesh(self, mesh: int) -> int:  # PROCESS(NM): meshes dealt out round-robin
        return mesh % jax.process_count()


class Setup:
    def __init__(self, cfg: SimConfig):
        self.cfg = cfg
        self.stop_status = 0
        self.messages: list[str] = []

    def shutdown(self, message: str) -> None:
        self.messages.append(message)
        self.stop_status = 1

    def proc_hvac(self) -> float:
        """Sum the HVAC vent areas of the meshes this process controls, then over all processes."""
        local_area = np.zeros(1, np.float32)
        for vent in self.cfg.vents:
            if self.cfg.process_of_mesh(vent.mesh) != jax.process_index():
                continue
            if not vent.attached_to_obst:
                self.shutdown(f"ERROR: VENT {vent.name} must be attached to a solid obstruction")
                break  # fix: no RETURN before the collective; every process reaches it
            local_area[0] += vent.area
        gathered = np.asarray(multihost_utils.process_allgather(np.append(local_area, self.stop_status)))
        self.stop_status = int(gathered[:, 1].max())  # an error on any process stops them all
        if self.stop_status:
            return 0.0
        return float(gathered[:, 0].sum())


cfg = SimConfig(n_meshes=4, vents=[Vent("SUPPLY", 0, 0.25, True), Vent("EXHAUST", 2, 0.25, True),
                                   Vent("RETURN", 3, 0.5, False), Vent("LEAK", 1, 0.04, True)])
setup = Setup(cfg)
area = setup.proc_hvac()
for m in setup.messages:
    print(m)
print(f"RESULT stop_status {setup.stop_status}")
if setup.stop_status == 0:
    print(f"RESULT hvac_area {area:.3f}")

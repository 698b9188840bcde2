# Flow solver start-up: only rank 0 reads the case file and the user inputs are broadcast field by field
# from a fixed list; t_step_start (added with the debug/restart options) is missing from that list.
# Source: https://github.com/MFlowCode/MFC/pull/696
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("x",))
CELLS = NamedSharding(MESH, P("x"))
CELLS_PER_RANK = 8
CASE_DIR = os.path.join(tempfile.gettempdir(), f"mfc_case_{os.environ.get('JOB_ID', 'local')}")


@dataclasses.dataclass
class CaseConfig:
    t_step_start: int = 0
    t_step_stop: int = 12
    t_step_save: int = 4
    cfl: float = 0.4
    debug: bool = False


# user inputs that rank 0 broadcasts after reading the case file
BCAST_FIELDS = ("t_step_stop", "t_step_save", "cfl", "debug")


def write_case_file() -> str:
    """The case script (run once, by the launching process) that generates the input file."""
    path = os.path.join(CASE_DIR, "case.json")
    if jax.process_index() == 0:
        os.makedirs(CASE_DIR, exist_ok=True)
        with open(path, "w") as f:
            json.dump({"t_step_start": 5, "t_step_stop": 12, "t_step_save": 4, "cfl": 0.4, "debug": True}, f)
    return path


def read_case_file(path: str) -> CaseConfig:
    with open(path) as f:
        return CaseConfig(**json.load(f))


def broadcast_user_inputs(cfg: CaseConfig) -> CaseConfig:
    values = np.array([float(getattr(cfg, name)) for name in BCAST_FIELDS], np.float32)
    values = np.asarray(multihost_utils.broadcast_one_to_all(values))
    for name, value in zip(BCAST_FIELDS, values):
        kind = type(getattr(CaseConfig, name))
        setattr(cfg, name, kind(value) if kind is not bool else bool(value))
    return cfg


def initialize_inputs(path: str) -> CaseConfig:
    cfg = read_case_file(path) if jax.process_index() == 0 else CaseConfig()
    return broadcast_user_inputs(cfg)


@jax.jit
def rk_step(u, cfl):
    speed = jnp.max(jnp.abs(u)) + 1e-6                 # global wave speed: cross-rank reduction
    dt = cfl / speed
    flux = 0.5 * u * u
    return u - dt * 0.1 * (flux - jnp.roll(flux, 1)), dt


class Simulation:
    def __init__(self, cfg: CaseConfig):
        self.cfg = cfg
        x = np.linspace(0, 1, CELLS_PER_RANK, dtype=np.float32) + jax.process_index()
        self.u = jax.make_array_from_process_local_data(CELLS, 1.0 + 0.5 * np.sin(np.pi * x))
        self.saves = []

    def run(self):
        for t_step in range(self.cfg.t_step_start, self.cfg.t_step_stop):
            self.u, dt = rk_step(self.u, jnp.float32(self.cfg.cfl))
            if t_step % self.cfg.t_step_save == 0:
                self.saves.append((t_step, round(float(dt), 5)))
        return float(jnp.sum(self.u))


cfg = initialize_inputs(write_case_file())
sim = Simulation(cfg)
total = sim.run()
print("RESULT saves", sim.saves)
print("RESULT total", round(total, 4))

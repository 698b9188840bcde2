# A wall-time checkpoint trigger is decided on process 0's clock and broadcast; the checkpoint write gathers
# Source: https://github.com/idaholab/moose/pull/26588
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
import tempfile
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_walltime_ckpt", os.environ.get("JOB_ID", "local"))
os.makedirs(OUT_DIR, exist_ok=True)


@dataclass
class OutputConfig:
    wall_time_interval_s: float = 1.0
    num_steps: int = 5
    cells_per_host: int = 4


class WallTimeCheckpoint:
    def __init__(self, cfg: OutputConfig):
        self.cfg = cfg
        self.last_output = time.monotonic()
        self.written = []

    def should_output(self) -> bool:
        elapsed = time.monotonic() - self.last_output
        return bool(multihost_utils.broadcast_one_to_all(np.bool_(elapsed >= self.cfg.wall_time_interval_s)))

    def output(self, step, field):
        full = np.asarray(multihost_utils.process_allgather(field, tiled=True))
        if jax.process_index() == 0:
            np.save(os.path.join(OUT_DIR, f"checkpoint_{step:04d}.npy"), full)
        self.written.append(step)
        self.last_output = time.monotonic()


def read_boundary_conditions(step):
    """Host-local I/O: process 1 owns the large boundary files, so its reads are slow."""
    time.sleep(0.6 if jax.process_index() == 1 else 0.0)
    return np.float32(0.01 * (step + 1))


@jax.jit
def diffuse(u, bc):
    lap = jnp.roll(u, 1) + jnp.roll(u, -1) - 2 * u
    return u + 0.1 * lap + bc


def main():
    cfg = OutputConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("cells",), axis_types=(jax.sharding.AxisType.Auto,))
    sharding = NamedSharding(mesh, P("cells"))
    local = np.linspace(0, 1, cfg.cells_per_host, dtype=np.float32) + jax.process_index()
    u = jax.make_array_from_process_local_data(sharding, local)
    u = diffuse(u, np.float32(0.0))  # compile before the clock starts
    bc = read_boundary_conditions(0)
    multihost_utils.sync_global_devices("start")
    ckpt = WallTimeCheckpoint(cfg)
    for step in range(cfg.num_steps):
        u = diffuse(u, bc)
        bc = read_boundary_conditions(step + 1)  # prefetch the next step's boundary values
        if ckpt.should_output():
            ckpt.output(step, u)
    total = multihost_utils.process_allgather(jnp.sum(u), tiled=True)
    print("RESULT written", ckpt.written)
    print("RESULT total", round(float(np.asarray(total).ravel()[0]), 3))


main()

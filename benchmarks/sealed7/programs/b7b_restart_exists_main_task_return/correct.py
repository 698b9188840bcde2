# Port of a CDEPS (CESM/E3SM data models) bug: the DGLC restart read checks the restart pointer's
# existence on the main task only and returns only there; the other tasks go on into the collective open.
# Source: https://github.com/ESCOMP/CDEPS/pull/429
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RUNDIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed7_cdeps", os.environ.get("JOB_ID", "local"))
CL = 256  # length of a file-name buffer


def bcast_string(s: str) -> str:
    buf = np.zeros(CL, np.uint8)
    raw = s.encode()[:CL]
    buf[:len(raw)] = np.frombuffer(raw, np.uint8)
    out = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    return bytes(out[out != 0]).decode()


@dataclass
class Config:
    inst_suffix: str = ""
    n_cells: int = 16


class DglcDataModel:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.main_task = jax.process_index() == 0
        self.mesh = jax.make_mesh((jax.device_count(),), ("cells",))
        thk = np.linspace(100.0, 300.0, cfg.n_cells, dtype=np.float32)
        self.thickness = jax.make_array_from_callback((cfg.n_cells,), NamedSharding(self.mesh, P("cells")),
                                                      lambda i: thk[i])

    def pio_openfile_read(self, rfilename: str) -> None:
        """Collective open + read of the restart field, then an agreement on its checksum."""
        with open(rfilename) as f:
            scale = float(f.read().strip())
        local = np.float32(scale)
        self.thickness = jax.jit(lambda t, s: t * s)(self.thickness, jnp.asarray(local))

    def restart_read(self) -> None:
        rpointer = os.path.join(RUNDIR, f"rpointer.glc{self.cfg.inst_suffix}")
        rfilename = ""
        exists = np.int32(0)
        if self.main_task:
            exists = np.int32(os.path.exists(rpointer))
        # fix from the PR: broadcast 'exists' and return on all tasks when it is false
        exists = int(multihost_utils.broadcast_one_to_all(exists))
        if not exists:
            if self.main_task:
                print(f"dglc_restart_read: {rpointer} does not exist, starting from initial data")
            return
        if self.main_task:
            with open(rpointer) as f:
                rfilename = f.readline().strip()
        rfilename = bcast_string(rfilename)
        self.pio_openfile_read(rfilename)

    def advance(self) -> float:
        return float(jax.jit(jnp.sum)(self.thickness))


os.makedirs(RUNDIR, exist_ok=True)
model = DglcDataModel(Config())
model.restart_read()  # no rpointer.glc in this run directory: a first (hybrid) start
print(f"RESULT total_thickness {model.advance():.1f}")

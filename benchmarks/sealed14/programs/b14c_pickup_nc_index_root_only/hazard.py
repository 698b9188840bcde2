# Weather model picks up from a checkpoint and restores the netCDF time index only on process 0, which reads the file
# Source: https://github.com/firedrakeproject/gusto/issues/447
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
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

CFG = {"nx_per_rank": 32, "dt": 0.01, "dumpfreq": 5, "tmax_first": 0.2, "tmax_second": 0.4}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
WORK = os.path.join(tempfile.gettempdir(), "mcjax_sealed14_pickup_nc_index", os.environ.get("JOB_ID", "local"))


@jax.jit
def diagnostics(h):
    return jnp.stack([jnp.sum(h), jnp.max(h), jnp.min(h)])


def global_field(local):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local[None, :])


class IO:
    def __init__(self, rank, pick_up=False):
        self.rank = rank
        self.nc_path = os.path.join(WORK, "field_output.json")
        if pick_up:
            self.pick_up_nc_dump()
        else:
            self.create_nc_dump()

    def create_nc_dump(self):
        self.field_t_idx = 0
        if self.rank == 0:
            with open(self.nc_path, "w") as f:
                json.dump({"time": [], "h_sum": []}, f)

    def pick_up_nc_dump(self):
        if self.rank == 0:
            with open(self.nc_path) as f:
                self.field_t_idx = len(json.load(f)["time"])

    def dump(self, h, t):
        diag = np.asarray(diagnostics(global_field(h)))
        self.field_t_idx += 1
        if self.rank == 0:
            with open(self.nc_path) as f:
                data = json.load(f)
            data["time"].append(round(t, 6))
            data["h_sum"].append(round(float(diag[0]), 6))
            with open(self.nc_path, "w") as f:
                json.dump(data, f)
        return diag


class Stepper:
    def __init__(self, rank, io, h=None, t=0.0):
        self.rank, self.io, self.t = rank, io, t
        x = (np.arange(CFG["nx_per_rank"]) + rank * CFG["nx_per_rank"]) / (2.0 * CFG["nx_per_rank"])
        self.h = h if h is not None else 1.0 + 0.1 * np.sin(2 * np.pi * x)
        self.step = int(round(t / CFG["dt"]))

    def run(self, tmax):
        while self.t < tmax - 1e-12:
            self.h = self.h - CFG["dt"] * 0.5 * (np.roll(self.h, -1) - np.roll(self.h, 1))
            self.t += CFG["dt"]
            self.step += 1
            if self.step % CFG["dumpfreq"] == 0:
                self.io.dump(self.h, self.t)
        np.save(os.path.join(WORK, f"chkpt_{self.rank}.npy"), np.append(self.h, self.t))


def main():
    rank = jax.process_index()
    os.makedirs(WORK, exist_ok=True)
    multihost_utils.sync_global_devices("workdir")
    first = Stepper(rank, IO(rank))
    first.run(CFG["tmax_first"])
    multihost_utils.sync_global_devices("checkpointed")
    saved = np.load(os.path.join(WORK, f"chkpt_{rank}.npy"))
    second = Stepper(rank, IO(rank, pick_up=True), h=saved[:-1], t=float(saved[-1]))
    second.run(CFG["tmax_second"])
    diag = second.io.dump(second.h, second.t)
    print("RESULT final_time", round(second.t, 6), "dumps", second.io.field_t_idx)
    print("RESULT h_sum", round(float(diag[0]), 6), "h_max", round(float(diag[1]), 6))


main()

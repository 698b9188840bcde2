# Plasma code names its restart files after the wall-clock date, read by process 0 and broadcast to every process
# Source: https://github.com/fmihpc/vlasiator/pull/216
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import datetime
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"cells_per_rank": 48, "vbins": 8, "steps": 6, "restart_every": 3, "name_len": 64}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
WORK = os.path.join(tempfile.gettempdir(), "mcjax_sealed14_restart_name_date", os.environ.get("JOB_ID", "local"))


@jax.jit
def moments(f):
    return jnp.stack([jnp.sum(f), jnp.sum(f * jnp.arange(f.shape[-1]))])


def restart_date():
    """Date string that goes into the restart file name (vlsv restart.<date>)."""
    buf = np.zeros(CFG["name_len"], np.uint8)
    if jax.process_index() == 0:
        raw = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S.%f").encode()
        buf[: len(raw)] = np.frombuffer(raw, np.uint8)
    buf = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    return bytes(buf).rstrip(b"\0").decode()


class Restart:
    def __init__(self, rank, nranks):
        self.rank, self.nranks = rank, nranks

    def write(self, f, step):
        date = restart_date()
        path = os.path.join(WORK, f"restart.{date}.rank{self.rank}.npy")
        np.save(path, f)
        multihost_utils.sync_global_devices(f"restart_{step}")
        return date

    def verify(self, date, step):
        """Every process re-reads all ranks' parts of the restart it just wrote."""
        total = 0.0
        for r in range(self.nranks):
            total += float(np.load(os.path.join(WORK, f"restart.{date}.rank{r}.npy")).sum())
        multihost_utils.sync_global_devices(f"verified_{step}")
        return total


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    os.makedirs(WORK, exist_ok=True)
    rng = np.random.default_rng(5 + rank)
    f = rng.uniform(0.0, 1.0, (CFG["cells_per_rank"], CFG["vbins"]))
    restart = Restart(rank, nranks)
    sharding = NamedSharding(MESH, P("rank"))
    for step in range(1, CFG["steps"] + 1):
        f = 0.9 * f + 0.1 * np.roll(f, 1, axis=1)
        m = np.asarray(moments(jax.make_array_from_process_local_data(sharding, f)))
        if step % CFG["restart_every"] == 0:
            date = restart.write(f, step)
            total = restart.verify(date, step)
            print("RESULT step", step, "restart_total", round(total, 6))
    print("RESULT density", round(float(m[0]), 6), "mean_v", round(float(m[1] / m[0]), 6))


main()

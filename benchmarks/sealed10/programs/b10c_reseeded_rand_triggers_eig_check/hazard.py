# A library call on process 0 reseeds the global RNG, so the random "check the spectrum" decision differs per process
# Source: https://github.com/paboyle/Grid/issues/331
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed10_rhmc", os.environ.get("JOB_ID", "local"))
os.makedirs(OUT_DIR, exist_ok=True)
N = 8
CHECK_PROB = 0.35
TRAJECTORIES = 6


def open_shared_log(path):
    """Stand-in for an MPI-IO file open: the I/O layer seeds the C-library RNG for its shared-file-pointer name."""
    np.random.seed(2)  # side effect inside the I/O library, on the writing process only
    name = f"{path}.shfp.{np.random.randint(1 << 30)}"
    return open(name, "w")


def make_operator(mesh):
    """A symmetric positive 'Dirac' operator, rows sharded over processes."""
    a = np.arange(N * N, dtype=np.float32).reshape(N, N) % 5 / 10.0
    m = (a + a.T + N * np.eye(N, dtype=np.float32)).astype(np.float32)
    return jax.device_put(m, NamedSharding(mesh, P("rows", None)))


@jax.jit
def power_iteration(m, v):
    for _ in range(20):
        v = m @ v
        v = v / jnp.linalg.norm(v)
    return v @ (m @ v)


def check_spectrum(m, mesh):
    v = jax.device_put(np.ones((N,), np.float32), NamedSharding(mesh, P()))
    return float(np.asarray(power_iteration(m, v).addressable_data(0)))


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("rows",), axis_types=(jax.sharding.AxisType.Auto,))
    np.random.seed(1234)  # the same seed on every process
    m = make_operator(mesh)
    log = open_shared_log(os.path.join(OUT_DIR, "rhmc.log")) if jax.process_index() == 0 else None
    checks, lam_max = [], None
    for traj in range(TRAJECTORIES):
        u = np.random.uniform()
        if u < CHECK_PROB:  # occasionally verify the rational approximation's spectral bounds
            lam_max = check_spectrum(m, mesh)
            checks.append(traj)
        if log is not None:
            log.write(f"traj {traj} lam_max {lam_max}\n")
    if log is not None:
        log.close()
    print("RESULT checks", checks)
    print("RESULT lam_max", None if lam_max is None else round(lam_max, 4))


main()

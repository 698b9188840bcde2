# Spectral transform benchmark: a failed round-trip correctness check stops the root rank only
# Source: https://github.com/ecmwf-ifs/ectrans/pull/32
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NLAT_LOCAL, NLON, NITER = 4, 32, 3
CHECK_TOL = 1e-10  # tolerance set for double-precision builds; this run is single precision


@jax.jit
def round_trip(grid):
    spec = jnp.fft.rfft(grid, axis=-1)
    spec = spec.at[:, NLON // 3:].set(0.0)  # spectral truncation
    return jnp.fft.irfft(spec, n=NLON, axis=-1)


@jax.jit
def error_norm(a, b):
    return jnp.sqrt(jnp.sum((a - b) ** 2) / jnp.sum(b ** 2))


def initial_field(rank):
    lat = np.linspace(-1.0, 1.0, 2 * NLAT_LOCAL, dtype=np.float32)[rank * NLAT_LOCAL:(rank + 1) * NLAT_LOCAL]
    lon = np.linspace(0.0, 2 * np.pi, NLON, endpoint=False, dtype=np.float32)
    return (np.cos(lat)[:, None] * (np.sin(3 * lon) + 0.5 * np.cos(5 * lon))[None, :]).astype(np.float32)


def report_timings(timings):
    all_t = np.asarray(multihost_utils.process_allgather(np.array(timings, np.float64)))
    return all_t.min(axis=0), all_t.max(axis=0)


def run_benchmark():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("lat",))
    field = jax.make_array_from_process_local_data(NamedSharding(mesh, P("lat")), initial_field(rank))
    reference, timings = field, []
    for _ in range(NITER):
        t0 = time.perf_counter()
        field = round_trip(field)
        field.block_until_ready()
        timings.append(time.perf_counter() - t0)
    err = float(error_norm(field, reference))
    print("RESULT relative_error_ok", err < 1e-5)
    if rank == 0:
        if err > CHECK_TOL:
            print(f"correctness check failed: {err:.3e} > {CHECK_TOL:.1e}")
            return "FAILED"
    tmin, tmax = report_timings(timings)
    if rank == 0:
        print(f"timings min {tmin.sum():.4f}s max {tmax.sum():.4f}s")
    return "OK"


def main():
    status = run_benchmark()
    print("RESULT status", status)


if __name__ == "__main__":
    main()

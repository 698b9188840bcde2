# Parameter study post-processing run on the root rank only; a failing job makes the error handler enter a barrier
# Source: https://github.com/kaipartmann/Peridynamics.jl/pull/256
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_POINTS = 16
JOBS = [{"horizon": 3.0, "stiffness": 1.0}, {"horizon": 0.0, "stiffness": 2.0}, {"horizon": 2.0, "stiffness": 1.5}]


def bond_energy(displacement, job):
    if job["horizon"] <= 0.0:
        raise ValueError(f"horizon must be positive, got {job['horizon']}")
    u = np.asarray(displacement)
    stretch = np.abs(np.diff(u)) / job["horizon"]
    return float(0.5 * job["stiffness"] * np.sum(stretch ** 2))


def process_each_job(jobs, displacement, only_root=False):
    """Post-process every job; a failing job is logged, and (in a distributed study) all ranks are synced."""
    results, failed = [], 0
    for i, job in enumerate(jobs):
        try:
            results.append(bond_energy(displacement, job))
        except ValueError as err:
            print(f"job {i} failed: {err}")
            results.append(float("nan"))
            failed += 1
            if not only_root:
                multihost_utils.sync_global_devices(f"job_{i}_failed")
    return np.array(results, np.float32), failed


@jax.jit
def relax(u, f):
    for _ in range(20):
        lap = jnp.roll(u, 1) + jnp.roll(u, -1) - 2.0 * u
        u = u + 0.2 * (lap + f)
    return u


def main():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("points",))
    sharding = NamedSharding(mesh, P("points"))
    force = np.linspace(-1.0, 1.0, N_POINTS, dtype=np.float32)[rank * 8:(rank + 1) * 8]
    u = relax(jax.make_array_from_process_local_data(sharding, np.zeros(8, np.float32)),
              jax.make_array_from_process_local_data(sharding, force))
    displacement = multihost_utils.process_allgather(u, tiled=True)

    energies = np.zeros(len(JOBS), np.float32)
    if rank == 0:
        energies, failed = process_each_job(JOBS, displacement)
        print(f"{failed} of {len(JOBS)} jobs failed")
    energies = np.asarray(multihost_utils.broadcast_one_to_all(energies))
    print("RESULT energies", [None if np.isnan(e) else round(float(e), 5) for e in energies])
    print("RESULT max_displacement", round(float(np.abs(displacement).max()), 5))


if __name__ == "__main__":
    main()

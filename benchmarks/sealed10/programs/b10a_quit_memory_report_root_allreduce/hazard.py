# On the exit path only process 0 prints the memory report, and the report sums usage over processes with a collective
# Source: https://github.com/deepmodeling/abacus-develop/pull/2557
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NGRID_PER_PROC, NBANDS, MIX_BETA, SCF_NMAX, SCF_THR = 16, 3, 0.4, 12, 1e-6


class Memory:
    """Per-process bookkeeping of the big arrays; print_all reports the sum over all processes."""
    records = {}

    @classmethod
    def record(cls, name, arr):
        cls.records[name] = np.asarray(arr).nbytes

    @classmethod
    def print_all(cls, log):
        local = np.array([sum(cls.records.values())], np.float64)
        total = multihost_utils.process_allgather(local).sum()  # collective over all processes
        log.append(f"TOTAL MEMORY (MB) {total / 2**20:.6f}")
        return total


def open_log():
    return []


def close_all_log(log):
    if jax.process_index() == 0:
        for line in log:
            print(line)


def quit_run(log, energy, niter):
    """Common exit path: close the logs, report memory, leave."""
    close_all_log(log)
    if jax.process_index() == 0:
        Memory.print_all(log)
    print("RESULT scf_iterations", niter)
    print("RESULT etot", round(energy, 6))


@jax.jit
def scf_step(rho, vext):
    v_hartree = 0.5 * rho  # toy local functional
    v_eff = vext + v_hartree
    rho_new = jnp.exp(-v_eff) / jnp.sum(jnp.exp(-v_eff)) * NBANDS
    drho = jnp.sum(jnp.abs(rho_new - rho))
    energy = jnp.sum(v_eff * rho_new) - 0.25 * jnp.sum(rho_new * rho_new)
    return rho + MIX_BETA * (rho_new - rho), drho, energy


def main():
    log = open_log()
    mesh = jax.make_mesh((jax.device_count(),), ("grid",))
    grid = NamedSharding(mesh, P("grid"))
    offset = jax.process_index() * NGRID_PER_PROC
    x = np.linspace(0.0, 1.0, NGRID_PER_PROC * jax.process_count(), dtype=np.float32)
    local_vext = (4.0 * (x[offset:offset + NGRID_PER_PROC] - 0.5) ** 2).astype(np.float32)
    local_rho = np.full((NGRID_PER_PROC,), NBANDS / x.size, np.float32)
    Memory.record("vext", local_vext)
    Memory.record("rho", local_rho)
    vext = jax.make_array_from_process_local_data(grid, local_vext)
    rho = jax.make_array_from_process_local_data(grid, local_rho)
    energy, niter = 0.0, 0
    for niter in range(1, SCF_NMAX + 1):
        rho, drho, e = scf_step(rho, vext)
        energy = float(e)
        log.append(f"ITER {niter} drho {float(drho):.3e} etot {energy:.6f}")
        if float(drho) < SCF_THR:
            break
    quit_run(log, energy, niter)


main()

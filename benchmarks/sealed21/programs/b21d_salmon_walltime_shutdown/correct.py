# A real-time propagation driver in the style of SALMON's TDDFT time loop: the k-points are distributed
# over the processes, every time step all-reduces the electron density, and when the elapsed wall time
# passes the shutdown limit the run writes restart data (gathered from all processes) and leaves the loop
# so the job can be resubmitted from the checkpoint.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NK, NORB, NGRID = 5, 4, 64
TIME_SHUTDOWN = 1.5  # seconds of wall time before writing restart data
DT = 0.02


class Timer:
    def __init__(self):
        self.t0 = None

    def begin(self):
        self.t0 = time.perf_counter()

    def now(self):
        return time.perf_counter() - self.t0


def my_kpoints(rank, world):
    per = -(-NK // world)
    return list(range(rank * per, min(NK, (rank + 1) * per)))


def init_wavefunctions(kpoints):
    """Random start + Gram-Schmidt per k-point, refined with a few subspace iterations."""
    psi = {}
    for k in kpoints:
        rng = np.random.default_rng(k)
        a = rng.normal(size=(NGRID * 8, NGRID * 8))
        for _ in range(6):
            a, _ = np.linalg.qr(a @ a.T[:, : a.shape[1]] / a.shape[0])
        psi[k] = a[:NGRID, :NORB].astype(np.float32)
    return psi


@jax.jit
def propagate(psi, vloc):
    phase = jnp.exp(-DT * vloc)[:, None]
    psi = psi * phase
    return psi / jnp.linalg.norm(psi, axis=0, keepdims=True)


def write_restart(step, psi, kpoints):
    local = np.stack([psi[k] for k in sorted(psi)]) if psi else np.zeros((0, NGRID, NORB), np.float32)
    pad = np.zeros((-(-NK // jax.process_count()), NGRID, NORB), np.float32)
    pad[: len(local)] = local
    gathered = np.asarray(multihost_utils.process_allgather(pad))
    return float(np.abs(gathered).sum())


def main():
    rank, world = jax.process_index(), jax.process_count()
    kpoints = my_kpoints(rank, world)
    psi = init_wavefunctions(kpoints)
    timer = Timer()
    timer.begin()
    vloc = jnp.linspace(0.0, 1.0, NGRID)
    step, checksum = 0, None
    for step in range(1, 100000):
        for k in kpoints:
            psi[k] = np.asarray(propagate(psi[k], vloc))
        rho_local = sum((psi[k] ** 2).sum(axis=1) for k in kpoints)
        rho = np.asarray(multihost_utils.process_allgather(rho_local)).sum(0)
        vloc = jnp.asarray(0.5 * rho / rho.max())
        shutdown = np.int32(timer.now() > TIME_SHUTDOWN)
        if int(multihost_utils.broadcast_one_to_all(shutdown)):
            checksum = write_restart(step, psi, kpoints)
            break
    print(f"rank {rank}: shutdown at step {step}, elapsed {timer.now():.2f}s")
    nsteps = np.asarray(multihost_utils.process_allgather(np.int32(step)))
    print("RESULT shutdown_steps_agree", bool((nsteps == nsteps[0]).all()))
    print("RESULT restart_checksum", round(checksum, 3))


if __name__ == "__main__":
    main()

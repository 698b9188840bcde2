# Dry-atmosphere dycore driver: low-storage RK stepping with wall-clock info and output callbacks
# Source: https://github.com/CliMA/ClimateMachine.jl/pull/38
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NELEM_LOCAL = 2048
NSTEPS = 48
INFO_SECONDS = 1.0
RK_A = (0.0, -0.4178904745, -1.192151694643, -1.697784692471, -1.514183444257)
RK_B = (0.1496590219993, 0.3792103129999, 0.8229550293869, 0.6994504559488, 0.1530572479681)


class EveryXWallTimeSeconds:
    """Run func() every `dtime` wall-clock seconds."""

    def __init__(self, func, dtime):
        self.func = func
        self.dtime = dtime
        self.lastcbtime_ns = time.monotonic_ns()

    def __call__(self, step, q):
        currtime_ns = time.monotonic_ns()
        runtime = (currtime_ns - self.lastcbtime_ns) * 1e-9
        if runtime < self.dtime:
            return None
        self.lastcbtime_ns = currtime_ns
        return self.func(step, q)


class EveryXSimulationSteps:
    def __init__(self, func, nsteps):
        self.func = func
        self.nsteps = nsteps

    def __call__(self, step, q):
        if step % self.nsteps == 0:
            return self.func(step, q)
        return None


def initial_condition(mesh):
    offset = jax.process_index() * NELEM_LOCAL
    x = (offset + np.arange(NELEM_LOCAL, dtype=np.float32)) / (NELEM_LOCAL * jax.process_count())
    rho = 1.0 + 0.1 * np.exp(-((x - 0.3) / 0.05) ** 2)
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("elems")), rho.astype(np.float32))


@jax.jit
def tendency(q):
    flux = 0.5 * q * q
    return -(flux - jnp.roll(flux, 1)) * 64.0 + 1e-3 * (jnp.roll(q, -1) - 2 * q + jnp.roll(q, 1))


@jax.jit
def lsrk_step(q, dq, dt):
    for a, b in zip(RK_A, RK_B):
        dq = a * dq + dt * tendency(q)
        q = q + b * dq
    return q, dq


@jax.jit
def stable_dt(q):
    return 0.4 / (64.0 * jnp.max(jnp.abs(q)))


@jax.jit
def norm(q):
    return jnp.sqrt(jnp.sum(q * q))


def write_initial_condition(q, path):
    full = np.asarray(multihost_utils.process_allgather(q, tiled=True))
    if jax.process_index() == 0:
        # rank 0 writes the pvtu-style master snapshot (all ranks' pieces, refined for plotting)
        refined = np.repeat(full.astype(np.float64), 1000)
        np.savez_compressed(path, rho=refined, noise=np.random.default_rng(0).random(refined.size))


def solve(q, callbacks):
    dq = jnp.zeros_like(q)
    for step in range(1, NSTEPS + 1):
        dt = stable_dt(q)
        q, dq = lsrk_step(q, dq, dt)
        for cb in callbacks:
            cb(step, q)
    return q


def main():
    mesh = Mesh(np.array(jax.devices()), ("elems",))
    q = initial_condition(mesh)
    eng0 = float(norm(q))
    outdir = tempfile.mkdtemp(prefix="dycore_")
    write_initial_condition(q, os.path.join(outdir, "initial_condition.npz"))
    reports, maxima = [], []

    def info(step, q):
        reports.append(round(float(norm(q)) / eng0, 6))

    def track(step, q):
        maxima.append(round(float(multihost_utils.process_allgather(jnp.max(q.addressable_shards[0].data)).max()), 5))

    cbinfo = EveryXWallTimeSeconds(info, INFO_SECONDS)
    cbtrack = EveryXSimulationSteps(track, 12)
    t0 = time.monotonic()
    q = solve(q, (cbinfo, cbtrack))
    print("loop seconds", round(time.monotonic() - t0, 2), "info calls", len(reports))
    print("RESULT max_track", maxima)
    print("RESULT final_norm", round(float(norm(q)) / eng0, 5))


if __name__ == "__main__":
    main()

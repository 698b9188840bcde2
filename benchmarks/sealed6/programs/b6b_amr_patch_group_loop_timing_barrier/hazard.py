# AMR solver invoked over patch groups in chunks: the chunk loop ends at the rank's own patch count,
# and the timing barrier inside it is then reached a different number of times on each rank
# Source: https://github.com/gamer-project/gamer/pull/519 (port of the GAMER InvokeSolver deadlock to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PS1 = 8  # cells per patch side


@dataclass
class RuntimeOptions:
    timing: bool = True
    timing_barrier: bool = True
    npg_max: int = 4  # patch groups sent to the solver at once


OPT = RuntimeOptions()


def timing_sync(label, func, *args):
    """GAMER's TIMING_SYNC: with OPT__TIMING_BARRIER every rank waits before the timer starts."""
    if OPT.timing and OPT.timing_barrier:
        multihost_utils.sync_global_devices(label)
    return func(*args)


@jax.jit
def poisson_relax(rho, phi):
    for _ in range(4):
        nb = (jnp.roll(phi, 1, 1) + jnp.roll(phi, -1, 1) + jnp.roll(phi, 1, 2) + jnp.roll(phi, -1, 2))
        phi = 0.25 * (nb - rho / PS1 ** 2)
    return phi


def prepare_rho(patches, pid0, npg):
    return patches[pid0:pid0 + npg]


def close_step(phi_out, pid0, result):
    result[pid0:pid0 + phi_out.shape[0]] = np.asarray(phi_out)


def invoke_solver(patches):
    n_total = patches.shape[0]
    result = np.zeros_like(patches)
    for disp in range(0, n_total, OPT.npg_max):
        npg = min(OPT.npg_max, n_total - disp)
        rho = timing_sync("prepare", prepare_rho, patches, disp, npg)
        phi = timing_sync("solve", poisson_relax, jnp.asarray(rho), jnp.zeros_like(rho))
        timing_sync("close", close_step, phi, disp, result)
    return result


def flag_and_refine(base, threshold):
    flagged = [p for p in base if float(np.abs(p).max()) > threshold]
    return np.stack(base + flagged) if flagged else np.stack(base)


rng = np.random.default_rng(5 + jax.process_index())
base_patches = [rng.normal(scale=1.0 + 0.4 * jax.process_index(), size=(PS1, PS1)).astype(np.float32)
                for _ in range(6)]
level_patches = flag_and_refine(base_patches, threshold=2.8)
phi = invoke_solver(level_patches)
local_min = np.array([float(phi.min()), level_patches.shape[0]], np.float64)
gathered = multihost_utils.process_allgather(local_min)
print("RESULT global phi min", round(float(gathered[:, 0].min()), 4), flush=True)
print("RESULT patches per rank", [int(n) for n in gathered[:, 1]], flush=True)

# Ewald solver tuning on rank 0 broadcasts its status flag with the tuned parameters (fixed)
# Source: https://github.com/scafacos/scafacos/pull/36 (port of the MPI Ewald tuning deadlock to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import math
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("particles",))
FCS_SUCCESS = 0
FCS_ERROR_WRONG_ARGUMENT = 2


@dataclass
class EwaldParams:
    box_l: float
    r_cut: float
    tolerance: float
    alpha: float = 0.0
    kmax: int = 0


def _real_space_error(alpha, r_cut, box_l, n):
    return 2.0 * math.exp(-(alpha * r_cut) ** 2) / math.sqrt(n * r_cut * box_l ** 3)


def ewald_tune(params: EwaldParams, n_particles: int) -> int:
    """Tune alpha and kmax for the requested accuracy; the search runs on the master rank."""
    tuned = np.zeros(3, np.float64)
    tuned[0] = FCS_SUCCESS
    if jax.process_index() == 0:
        if params.r_cut >= 0.5 * params.box_l:
            tuned[0] = FCS_ERROR_WRONG_ARGUMENT
    if jax.process_index() == 0 and tuned[0] == FCS_SUCCESS:
        alpha = 0.1
        while _real_space_error(alpha, params.r_cut, params.box_l, n_particles) > params.tolerance:
            alpha += 0.05
        tuned[1:] = (alpha, math.ceil(alpha * params.box_l * 1.5))
    # every rank learns whether the tuning succeeded and returns the same code
    tuned = multihost_utils.broadcast_one_to_all(tuned)
    if int(tuned[0]) != FCS_SUCCESS:
        return int(tuned[0])
    params.alpha, params.kmax = float(tuned[1]), int(tuned[2])
    return FCS_SUCCESS


@jax.jit
def real_space_energy(pos, q, alpha, r_cut):
    d = pos[:, None, :] - pos[None, :, :]
    r = jnp.sqrt(jnp.sum(d * d, axis=-1) + jnp.eye(pos.shape[0]))
    pair = q[:, None] * q[None, :] * jax.scipy.special.erfc(alpha * r) / r
    pair = jnp.where((r < r_cut) & ~jnp.eye(pos.shape[0], dtype=bool), pair, 0.0)
    return 0.5 * jnp.sum(pair)


def run_system(params: EwaldParams, seed: int, n_per_process: int = 8):
    rng = np.random.default_rng(seed * 100 + jax.process_index())
    local_pos = rng.uniform(0, params.box_l, size=(n_per_process, 3)).astype(np.float32)
    local_q = np.where(np.arange(n_per_process) % 2 == 0, 1.0, -1.0).astype(np.float32)
    n_total = n_per_process * jax.process_count()
    status = ewald_tune(params, n_total)
    if status != FCS_SUCCESS:
        return status, None
    sharding = NamedSharding(MESH, P("particles"))
    pos = jax.make_array_from_process_local_data(sharding, local_pos)
    q = jax.make_array_from_process_local_data(sharding, local_q)
    return status, float(real_space_energy(pos, q, params.alpha, params.r_cut))


SWEEP = [EwaldParams(box_l=4.0, r_cut=2.5, tolerance=1e-3),
         EwaldParams(box_l=6.0, r_cut=2.0, tolerance=1e-3),
         EwaldParams(box_l=8.0, r_cut=3.0, tolerance=1e-4)]

for i, p in enumerate(SWEEP):
    status, energy = run_system(p, seed=i)
    print("RESULT", i, status, p.kmax, None if energy is None else round(energy, 4), flush=True)

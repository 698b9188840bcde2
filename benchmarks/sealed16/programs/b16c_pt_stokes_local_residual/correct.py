# Pseudo-transient viscous solver: the convergence check uses the maximum residual over all ranks' blocks
# Source: https://github.com/PTsolvers/JustRelax.jl/pull/45
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class PTConfig:
    cells_per_rank: int = 16
    viscosity_contrast: float = 8.0     # stiff lower layer in the second half of the column
    eps: float = 1e-5
    iter_max: int = 5000
    nout: int = 10                      # check the residual every nout iterations
    damping: float = 4.0


def local_block(cfg, rank, nproc):
    n = cfg.cells_per_rank * nproc
    x = (np.arange(cfg.cells_per_rank) + rank * cfg.cells_per_rank + 0.5) / n
    eta = np.where(x < 0.5, 1.0, cfg.viscosity_contrast)
    buoyancy = np.exp(-100.0 * (x - 0.25) ** 2)                # a dense blob in the upper layer
    return eta.astype(np.float32), buoyancy.astype(np.float32)


def make_iteration(cfg, n):
    dx = 1.0 / n
    dtau = 0.45 * dx * dx / cfg.viscosity_contrast
    damp = 1.0 - cfg.damping / n

    @jax.jit
    def pt_iteration(v, dv, eta, rhs):
        eta_face = jnp.sqrt(eta * jnp.roll(eta, -1))
        q = eta_face * (jnp.roll(v, -1) - v) / dx
        res = (q - jnp.roll(q, 1)) / dx + rhs
        res = res.at[0].set(0.0).at[-1].set(0.0)               # no-slip top and bottom
        dv = damp * dv + res
        return v + dtau * dv, dv, res
    return pt_iteration


def residual_norm(res):
    local = np.abs(np.asarray(res.addressable_shards[0].data)).max()
    return float(np.asarray(multihost_utils.process_allgather(local)).max())     # maximum over all ranks


def solve(cfg, pt_iteration, v, dv, eta, rhs):
    err, it, history = 2.0 * cfg.eps, 0, []
    while it < cfg.iter_max and err > cfg.eps:
        v, dv, res = pt_iteration(v, dv, eta, rhs)
        it += 1
        if it % cfg.nout == 0:
            err = residual_norm(res)
            history.append(err)
    return v, it


def main():
    cfg = PTConfig()
    rank, nproc = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("z",))
    shard = NamedSharding(mesh, P("z"))
    eta_l, rhs_l = local_block(cfg, rank, nproc)
    glob = lambda a: jax.make_array_from_process_local_data(shard, a)
    eta, rhs = glob(eta_l), glob(rhs_l)
    v = glob(np.zeros_like(eta_l))
    dv = glob(np.zeros_like(eta_l))

    pt_iteration = make_iteration(cfg, cfg.cells_per_rank * nproc)
    v, iters = solve(cfg, pt_iteration, v, dv, eta, rhs)
    v_all = np.asarray(multihost_utils.process_allgather(v, tiled=True))
    print("RESULT iterations", iters)
    print("RESULT vmax", round(float(v_all.max()), 5))


if __name__ == "__main__":
    main()

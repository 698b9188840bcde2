# Explicit diffusion solver on a graded mesh: the CFL time step uses this rank's own minimum cell diameter instead of the global one
# Source: https://github.com/KVSlab/VaSP/pull/195
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
class SolverConfig:
    nodes_per_rank: int = 16
    nu: float = 0.05
    cfl: float = 0.4
    nsteps: int = 16                 # fixed number of steps per output interval
    refine_split: float = 0.2        # rank 0 owns the refined boundary layer [0, 0.2]


def local_nodes(cfg, rank, nproc):
    """Graded 1-D mesh: rank 0 holds the boundary layer, the other ranks the coarse bulk."""
    bounds = [0.0, cfg.refine_split] + list(np.linspace(cfg.refine_split, 1.0, nproc)[1:])
    lo, hi = bounds[rank], bounds[rank + 1]
    x = np.linspace(lo, hi, cfg.nodes_per_rank, endpoint=False)
    h = np.full_like(x, (hi - lo) / cfg.nodes_per_rank)
    return x.astype(np.float32), h.astype(np.float32)


def make_step(mesh):
    shard = NamedSharding(mesh, P("x"))

    @jax.jit
    def step(u, h, dt, nu):
        lap = (jnp.roll(u, -1) - 2.0 * u + jnp.roll(u, 1)) / (h * h)
        lap = lap.at[0].set(0.0).at[-1].set(0.0)          # Dirichlet ends stay fixed
        return u + dt * nu * lap

    def globalize(local):
        return jax.make_array_from_process_local_data(shard, local)
    return step, globalize


def stable_timestep(cfg, h_local):
    hmin = float(h_local.min())                           # minimum cell diameter for the CFL bound
    return cfg.cfl * hmin * hmin / cfg.nu, hmin


def main():
    cfg = SolverConfig()
    rank, nproc = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("x",))
    step, globalize = make_step(mesh)
    x, h = local_nodes(cfg, rank, nproc)
    u = globalize(np.exp(-200.0 * (x - 0.15) ** 2).astype(np.float32))
    h_g = globalize(h)

    dt, hmin = stable_timestep(cfg, h)
    cfl_number = cfg.nu * dt / hmin ** 2                            # reported as in the solver log
    for _ in range(cfg.nsteps):
        u = step(u, h_g, jnp.float32(dt), jnp.float32(cfg.nu))

    u_all = np.asarray(multihost_utils.process_allgather(u, tiled=True))
    print("RESULT dt", f"{dt:.6g}", "t_final", f"{cfg.nsteps * dt:.6g}", "hmin", f"{hmin:.4g}", "cfl", round(cfl_number, 4))
    print("RESULT peak", round(float(u_all.max()), 5))
    print("RESULT mass", round(float(np.sum(u_all * np.asarray(multihost_utils.process_allgather(h_g, tiled=True)))), 5))


if __name__ == "__main__":
    main()

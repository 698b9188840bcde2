# Pseudo-spectral diffusion solver with a wall-time limit: the run stops when its wall-clock
# budget is used up and writes a final checkpoint (gathered from all ranks) before exiting.
import os
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class RunConfig:
    n_local: int = 32
    max_iterations: int = 100000
    max_walltime: float = 2.0
    diffusivity: float = 0.05
    dt: float = 0.01
    grid_file_modes: int = 400


class WallClock:
    def __init__(self):
        self.start = time.perf_counter()

    def elapsed(self):
        return time.perf_counter() - self.start


def chebyshev_matrix(n):
    x = np.cos(np.pi * np.arange(n + 1) / n)
    c = np.hstack([2.0, np.ones(n - 1), 2.0]) * (-1.0) ** np.arange(n + 1)
    dx = x[:, None] - x[None, :]
    d = np.outer(c, 1.0 / c) / (dx + np.eye(n + 1))
    return d - np.diag(d.sum(axis=1))


def write_grid_file(cfg, path):
    """Rank 0 writes the radial grid and derivative operators for post-processing."""
    d1 = chebyshev_matrix(cfg.grid_file_modes)
    ops = [d1]
    for _ in range(6):
        ops.append(ops[-1] @ d1)
    np.savez(path, d1=d1, d6=ops[-1])


@jax.jit
def diffuse(u, kappa, dt):
    k = jnp.fft.rfftfreq(u.shape[0]) * 2 * jnp.pi * u.shape[0]
    uh = jnp.fft.rfft(u) * jnp.exp(-kappa * k ** 2 * dt * 1e-3)
    return jnp.fft.irfft(uh, n=u.shape[0])


def global_energy(u_local):
    return float(np.asarray(multihost_utils.process_allgather(np.float64(np.sum(u_local ** 2)))).sum())


def write_checkpoint(u_local, iteration):
    full = np.asarray(multihost_utils.process_allgather(np.asarray(u_local)))
    return iteration, float(np.abs(full).sum())


def main():
    cfg = RunConfig()
    rank = jax.process_index()
    rng = np.random.default_rng(11 + rank)
    u = jnp.asarray(rng.normal(size=cfg.n_local))
    if rank == 0:
        write_grid_file(cfg, os.path.join(os.environ.get("TMPDIR", "/tmp"), f"grid_{os.getpid()}.npz"))
    clock = WallClock()

    iteration = 0
    energy = global_energy(np.asarray(u))
    while iteration < cfg.max_iterations:
        elapsed = clock.elapsed()
        if elapsed >= cfg.max_walltime:
            break
        u = diffuse(u, cfg.diffusivity, cfg.dt)
        iteration += 1
        energy = global_energy(np.asarray(u))

    ckpt_iter, ckpt_norm = write_checkpoint(np.asarray(u), iteration)
    print("RESULT final_iteration", ckpt_iter)
    print("RESULT energy", round(energy, 6))
    print("RESULT checkpoint_norm", round(ckpt_norm, 6))
    if rank == 0:
        os.remove(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"grid_{os.getpid()}.npz"))


if __name__ == "__main__":
    main()

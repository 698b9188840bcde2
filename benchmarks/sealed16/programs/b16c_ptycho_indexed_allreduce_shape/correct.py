# Ptychography position correction: each rank all-reduces the full position buffer, zero outside its own scan indices
# Source: https://github.com/AdvancedPhotonSource/pty-chi/pull/47
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class ReconConfig:
    n_positions: int = 177
    epochs: int = 3
    step_size: float = 0.5


class MultiprocessMixin:
    def __init__(self, mesh):
        self.sharding = NamedSharding(mesh, P("ranks"))
        self._sum = jax.jit(lambda x: jnp.sum(x, axis=0))

    def all_reduce(self, arr):
        local = np.ascontiguousarray(arr, np.float32)[None]
        return np.asarray(self._sum(jax.make_array_from_process_local_data(self.sharding, local)))

    def sync_buffer(self, buffer, indices=None):
        """Sum a buffer over ranks; with `indices`, only those elements of each rank contribute."""
        if indices is None:
            return self.all_reduce(buffer)
        temp = np.zeros_like(buffer)
        temp[indices] = buffer[indices]
        return self.all_reduce(temp)


def chunk_of_rank(n, rank, nproc):
    chunks = np.array_split(np.arange(n), [77] if nproc == 2 else nproc)   # scan split by acquisition rows
    return chunks[rank]


def position_gradient(true_pos, est_pos, idx, epoch):
    """Stand-in for the cross-correlation position update on this rank's diffraction patterns."""
    g = np.zeros_like(est_pos)
    g[idx] = (true_pos[idx] - est_pos[idx]) * (0.8 ** epoch)
    return g


def main():
    cfg = ReconConfig()
    rank, nproc = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("ranks",))
    mp = MultiprocessMixin(mesh)

    grid = np.stack(np.meshgrid(np.arange(15), np.arange(12)), -1).reshape(-1, 2)[: cfg.n_positions]
    true_pos = grid.astype(np.float32) * 4.0
    est_pos = true_pos + np.random.default_rng(0).normal(0, 0.7, true_pos.shape).astype(np.float32)
    idx = chunk_of_rank(cfg.n_positions, rank, nproc)

    for epoch in range(cfg.epochs):
        g = position_gradient(true_pos, est_pos, idx, epoch)
        g = mp.sync_buffer(g, indices=idx)
        est_pos = est_pos + cfg.step_size * g
    err = float(np.abs(est_pos - true_pos).mean())
    total = mp.sync_buffer(np.array([err], np.float32))
    print("RESULT mean_position_error", round(err, 5))
    print("RESULT summed_error", round(float(total[0]), 5))


if __name__ == "__main__":
    main()

# Diagnostic smoothing on a decomposed mesh: halos are exchanged only for patches that need smoothing
# Source: https://github.com/MPAS-Dev/MPAS-Model/pull/184 (port of an MPAS hiwc halo-exchange deadlock to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_CELLS = 16  # a periodic ring of cells, split in contiguous blocks


@dataclass
class HiwcConfig:
    threshold: float = 1.0  # g/m^3 above which a patch is smoothed
    passes: int = 2


class Block:
    def __init__(self, pid: int, nproc: int, field: np.ndarray):
        n = N_CELLS // nproc
        self.pid, self.nproc = pid, nproc
        self.owned = field[pid * n:(pid + 1) * n].astype(np.float32)
        self.halo = np.zeros(2, dtype=np.float32)  # west, east

    def exchange_halo(self) -> None:
        edges = np.array([self.owned[0], self.owned[-1]], dtype=np.float32)
        every = np.asarray(multihost_utils.process_allgather(edges[None, :], tiled=True))
        west, east = (self.pid - 1) % self.nproc, (self.pid + 1) % self.nproc
        self.halo[:] = every[west, 1], every[east, 0]


def needs_smoothing(block: Block, cfg: HiwcConfig) -> bool:
    return bool(np.max(block.owned) > cfg.threshold)


def smooth_hiwc(block: Block, cfg: HiwcConfig) -> None:
    for _ in range(cfg.passes):
        if needs_smoothing(block, cfg):
            block.exchange_halo()
            ext = np.concatenate([[block.halo[0]], block.owned, [block.halo[1]]])
            block.owned = (0.25 * ext[:-2] + 0.5 * ext[1:-1] + 0.25 * ext[2:]).astype(np.float32)


def main():
    field = np.full(N_CELLS, 0.2, dtype=np.float32)
    field[3] = 2.5  # a convective cell on the first block: only that patch exceeds the threshold
    block = Block(jax.process_index(), jax.process_count(), field)
    smooth_hiwc(block, HiwcConfig())
    full = np.asarray(multihost_utils.process_allgather(block.owned[None, :], tiled=True)).ravel()
    print(f"RESULT hiwc_max={float(full.max()):.5f}")
    print(f"RESULT hiwc_sum={float(full.sum()):.5f}")


if __name__ == "__main__":
    main()

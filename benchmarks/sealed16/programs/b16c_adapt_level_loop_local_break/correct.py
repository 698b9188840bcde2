# Nested mesh adaptation: the level loop stops only when no rank has anything left to refine, so every rank enters each metric evaluation
# Source: https://github.com/underworldcode/underworld3/issues/512
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class AdaptConfig:
    cells_per_rank: int = 8
    max_levels: int = 4
    floor: float = 1e-3          # indicator below which a cell is never refined
    frac: float = 0.25           # refine cells whose normalised metric exceeds this


def field_curvature(x):
    t = np.tanh(30.0 * (x - 0.25))                     # a front in the first half of the domain
    return np.abs(-2.0 * 900.0 * t * (1.0 - t ** 2))


def local_mesh(cfg, rank, nproc):
    edges = np.linspace(rank / nproc, (rank + 1) / nproc, cfg.cells_per_rank + 1)
    return np.stack([edges[:-1], edges[1:]], axis=1)


def indicator(cells):
    mid, h = cells.mean(axis=1), cells[:, 1] - cells[:, 0]
    return h ** 2 * field_curvature(mid)


def eval_metric(ind):
    """Global metric: the indicator normalised by its maximum over the whole mesh (collective)."""
    local_max = np.float32(ind.max() if ind.size else 0.0)
    gmax = float(np.asarray(multihost_utils.process_allgather(local_max)).max())
    return ind / max(gmax, 1e-12)


def split(cells, which):
    keep = np.delete(cells, which, axis=0)
    mids = cells[which].mean(axis=1)
    left = np.stack([cells[which, 0], mids], axis=1)
    right = np.stack([mids, cells[which, 1]], axis=1)
    out = np.concatenate([keep, left, right])
    return out[np.argsort(out[:, 0])]


def adapt(cells, cfg):
    history = []
    for level in range(cfg.max_levels):
        ind = indicator(cells)
        cand = np.flatnonzero(ind > cfg.floor)
        counts = np.asarray(multihost_utils.process_allgather(np.int32(cand.size)))
        history.append(int(counts.sum()))
        if counts.sum() == 0:                             # nothing left to refine anywhere
            break
        metric = eval_metric(ind[cand])
        cells = split(cells, cand[metric > cfg.frac])
    return cells, history


def main():
    cfg = AdaptConfig()
    rank, nproc = jax.process_index(), jax.process_count()
    cells, history = adapt(local_mesh(cfg, rank, nproc), cfg)
    total = np.asarray(multihost_utils.process_allgather(np.int32(len(cells)))).sum()
    print("RESULT candidates_per_level", history)
    print("RESULT total_cells", int(total))


if __name__ == "__main__":
    main()

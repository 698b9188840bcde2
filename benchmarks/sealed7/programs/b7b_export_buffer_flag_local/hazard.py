# Port of a VELOCIraptor-STF bug: whether the particle export is split into buffered chunks is
# decided from the rank's own export count, so ranks run different communication patterns.
# Source: https://github.com/pelahi/VELOCIraptor-STF/pull/75
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import math
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Options:
    mpi_particle_buffer_size: int = 8  # particles per message (MPIPartBufSize)
    n_particles: int = 20


def domain_of(x: np.ndarray) -> np.ndarray:
    """Mesh-based decomposition of [0, 1) into equal slabs, one per process."""
    return np.minimum((x * jax.process_count()).astype(np.int32), jax.process_count() - 1)


def load_snapshot(opt: Options) -> np.ndarray:
    # The particles each process read from its part of the snapshot; some lie in the other slab.
    lo = 0.05 if jax.process_index() == 0 else 0.30
    return np.linspace(lo, 0.99, opt.n_particles).astype(np.float32)


def _allgather_block(block: np.ndarray, count: int) -> list[np.ndarray]:
    padded = np.full(block.shape[0], np.nan, np.float32)
    padded[:count] = block[:count]
    return [row for row in np.asarray(multihost_utils.process_allgather(padded))]


def mpi_build_particle_export_list(opt: Options, x: np.ndarray) -> np.ndarray:
    """Send every particle to the process owning its slab; return the particles this process owns."""
    export = x[domain_of(x) != jax.process_index()]
    nexport = export.size
    buffer_flag = nexport > opt.mpi_particle_buffer_size
    received: list[np.ndarray] = []
    if buffer_flag:
        counts = np.asarray(multihost_utils.process_allgather(np.int32(nexport)))
        nchunks = math.ceil(int(counts.max()) / opt.mpi_particle_buffer_size)
        for c in range(nchunks):
            chunk = export[c * opt.mpi_particle_buffer_size:(c + 1) * opt.mpi_particle_buffer_size]
            buf = np.zeros(opt.mpi_particle_buffer_size, np.float32)
            received += _allgather_block(np.concatenate([chunk, buf])[:buf.size], chunk.size)
    else:
        buf = np.zeros(opt.mpi_particle_buffer_size, np.float32)
        buf[:nexport] = export
        received += _allgather_block(buf, nexport)
    imported = np.concatenate(received)
    imported = imported[~np.isnan(imported)]
    imported = imported[domain_of(imported) == jax.process_index()]
    kept = x[domain_of(x) == jax.process_index()]
    return np.sort(np.concatenate([kept, imported]))


opt = Options()
mine = mpi_build_particle_export_list(opt, load_snapshot(opt))
counts = np.asarray(multihost_utils.process_allgather(np.int32(mine.size)))
sums = np.asarray(multihost_utils.process_allgather(np.float32(mine.sum())))
print("RESULT owned_per_process " + " ".join(str(int(c)) for c in counts))
print("RESULT position_sum " + f"{float(sums.sum()):.4f}")

# openPMD-style parallel output of a DFT step: density mesh slabs and atom positions, collective dataset setup + flush
# Source: https://github.com/cp2k/cp2k/pull/4942
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import hashlib
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BOX = 12.0
NGRID = 24
WATER_CLUSTER = np.array([[1.2, 5.9, 6.1], [1.9, 6.6, 6.0], [0.6, 6.3, 5.4],
                          [3.4, 4.8, 6.3], [4.1, 5.3, 6.8], [3.0, 4.1, 6.9],
                          [2.2, 7.9, 4.4], [2.8, 8.5, 4.9], [1.6, 8.4, 3.9]])
OUT = os.path.join(tempfile.gettempdir(), "cp2k_openpmd_" + os.environ.get("JOB_ID", "local"))


class RecordComponent:
    def __init__(self, series, path):
        self.series, self.path = series, path
        self.shape, self.chunks = None, []

    def reset_dataset(self, shape):
        self.shape = tuple(shape)

    def store_chunk(self, data, offset):
        """Queue a chunk for the next flush; the first store of a record creates its dataset in the backend."""
        self.series._setup_dataset(self)
        self.chunks.append((tuple(offset), np.asarray(data, np.float64)))


class Series:
    """Parallel-HDF5-backed series: dataset creation and flushing are collective over all ranks."""

    def __init__(self, path):
        self.path, self.records, self._created = path, {}, []

    def record(self, path):
        return self.records.setdefault(path, RecordComponent(self, path))

    def _setup_dataset(self, rc):
        if rc.path in self._created:
            return
        meta = np.array([len(self._created), *rc.shape, 0, 0][:4], np.int64)
        all_meta = np.asarray(multihost_utils.process_allgather(meta))
        if not (all_meta == all_meta[0]).all():
            raise RuntimeError(f"[HDF5] inconsistent collective dataset creation for {rc.path}: {all_meta.tolist()}")
        self._created.append(rc.path)

    def flush(self):
        digests = {}
        for path in self._created:
            rc = self.records[path]
            full = np.zeros(rc.shape)
            local = np.full(rc.shape, np.nan)
            for offset, data in rc.chunks:
                local[tuple(slice(o, o + n) for o, n in zip(offset, data.shape))] = data
            gathered = np.asarray(multihost_utils.process_allgather(local.astype(np.float32)))
            for part in gathered:
                full = np.where(np.isnan(part), full, part)
            digests[path] = hashlib.sha1(full.astype(np.float32).tobytes()).hexdigest()[:12]
        return digests


def density_slab(rank, nproc):
    lo, hi = NGRID * rank // nproc, NGRID * (rank + 1) // nproc
    x = (np.arange(lo, hi)[:, None, None] + 0.5) * BOX / NGRID
    y = (np.arange(NGRID)[None, :, None] + 0.5) * BOX / NGRID
    z = (np.arange(NGRID)[None, None, :] + 0.5) * BOX / NGRID
    rho = sum(np.exp(-((x - a[0]) ** 2 + (y - a[1]) ** 2 + (z - a[2]) ** 2)) for a in WATER_CLUSTER)
    return lo, rho


def local_atoms(rank, nproc):
    """Atoms are owned by the rank whose real-space slab contains them."""
    owner = np.minimum((WATER_CLUSTER[:, 0] / BOX * nproc).astype(int), nproc - 1)
    idx = np.flatnonzero(owner == rank)
    return idx, WATER_CLUSTER[idx]


def write_step(series, step):
    rank, nproc = jax.process_index(), jax.process_count()
    lo, rho = density_slab(rank, nproc)
    mesh = series.record(f"data/{step}/meshes/rho")
    mesh.reset_dataset((NGRID, NGRID, NGRID))
    mesh.store_chunk(rho, offset=(lo, 0, 0))
    idx, pos = local_atoms(rank, nproc)
    atoms = series.record(f"data/{step}/particles/atoms/position")
    atoms.reset_dataset((len(WATER_CLUSTER), 3))
    if len(idx):
        atoms.store_chunk(pos, offset=(int(idx[0]), 0))
    else:
        atoms.store_chunk(np.zeros((0, 3)), offset=(0, 0))  # runs the dataset setup without writing data
    return series.flush()


def main():
    os.makedirs(OUT, exist_ok=True)
    series = Series(os.path.join(OUT, "cp2k_%T.h5"))
    digests = write_step(series, 0)
    for path, digest in sorted(digests.items()):
        print("RESULT", path, digest)


if __name__ == "__main__":
    main()

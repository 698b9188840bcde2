# Writing an I/O decomposition map (ParallelIO style): every task contributes its part of the global map (ported to JAX)
# Source: https://github.com/NCAR/ParallelIO/issues/706
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Comm:
    """Thin mpi4py-like layer over the JAX process collectives."""

    def __init__(self):
        self.rank = jax.process_index()
        self.size = jax.process_count()

    def Allgather(self, sendbuf, recvbuf):
        recvbuf[...] = np.asarray(multihost_utils.process_allgather(np.asarray(sendbuf))).reshape(recvbuf.shape)

    def Gather(self, sendbuf, recvbuf, root=0):
        gathered = np.asarray(multihost_utils.process_allgather(np.asarray(sendbuf)))
        if self.rank == root:
            recvbuf[...] = gathered.reshape(recvbuf.shape)


class IODesc:
    def __init__(self, ioid, gdims, compmap):
        self.ioid = ioid
        self.gdims = gdims
        self.map = np.asarray(compmap, dtype=np.int64)
        self.maplen = len(self.map)


def decomp_for_task(rank, ntasks, gdims):
    """Block-cyclic ownership of a 2-D field: rows go round-robin to the tasks."""
    nrows, ncols = gdims
    rows = [r for r in range(nrows) if r % ntasks == rank]
    return [r * ncols + c + 1 for r in rows for c in range(ncols)]


def write_nc_decomp(comm, iodesc):
    task_maplen = np.zeros(comm.size, dtype=np.int64)
    # Gather maplens from all tasks and fill the task_maplen array.
    comm.Gather(np.array([iodesc.maplen], dtype=np.int64), task_maplen, root=0)
    max_maplen = int(task_maplen.max())
    padded = np.zeros(max_maplen, dtype=np.int64)
    padded[:min(iodesc.maplen, max_maplen)] = iodesc.map[:max_maplen]
    full_map = np.zeros((comm.size, max_maplen), dtype=np.int64)
    comm.Allgather(padded, full_map)
    global_map = np.concatenate([full_map[t, :task_maplen[t]] for t in range(comm.size)])
    return task_maplen, global_map


def main():
    comm = Comm()
    gdims = (5, 4)
    iodesc = IODesc(512, gdims, decomp_for_task(comm.rank, comm.size, gdims))
    task_maplen, global_map = write_nc_decomp(comm, iodesc)
    print("RESULT task_maplen", task_maplen.tolist())
    print("RESULT map_entries", len(global_map), "map_checksum", int(np.sum(global_map * np.arange(1, len(global_map) + 1))))


if __name__ == "__main__":
    main()

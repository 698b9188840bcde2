# Transfer benchmark result sync: non-root ranks receive every CU of each iteration's set (fixed)
# Source: https://github.com/ROCm/TransferBench/pull/270 (port of the BroadcastTfrResult mismatch to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_ITERATIONS = 3
EXECUTOR_RANK = 0


@dataclass
class TransferResult:
    num_bytes: int = 0
    per_iter_msec: list = field(default_factory=list)
    per_iter_cus: list = field(default_factory=list)  # list of [(xcc_id, cu_id), ...] per iteration


class Communicator:
    def __init__(self):
        self.rank = jax.process_index()

    def broadcast(self, value, root):
        arr = np.asarray(value)
        return multihost_utils.broadcast_one_to_all(arr, is_source=self.rank == root)


@jax.jit
def copy_kernel(src, n_cus):
    chunks = src.reshape(8, -1)
    used = (jnp.arange(8) % n_cus).astype(jnp.int32)
    return chunks * 1.0, used


def run_transfer(num_bytes):
    result = TransferResult(num_bytes=num_bytes)
    src = jnp.arange(num_bytes // 4, dtype=jnp.float32)
    for it in range(NUM_ITERATIONS):
        _, used = copy_kernel(src, it + 1)
        used = sorted(set(np.asarray(used).tolist()))
        result.per_iter_msec.append(0.5 + 0.1 * it)
        result.per_iter_cus.append([(u // 4, u % 4) for u in used])
    return result


def broadcast_tfr_result(comm: Communicator, result: TransferResult, root: int):
    result.num_bytes = int(comm.broadcast(np.int64(result.num_bytes), root))
    result.per_iter_msec = comm.broadcast(np.asarray(result.per_iter_msec, np.float64)
                                          if comm.rank == root else np.zeros(NUM_ITERATIONS), root).tolist()
    cus_out = []
    for i in range(NUM_ITERATIONS):
        set_size = len(result.per_iter_cus[i]) if comm.rank == root else 0
        set_size = int(comm.broadcast(np.int32(set_size), root))
        if comm.rank == root:
            for xcc_cu in result.per_iter_cus[i]:
                comm.broadcast(np.asarray(xcc_cu, np.int32), root)
            cus_out.append(list(result.per_iter_cus[i]))
        else:
            received = [comm.broadcast(np.zeros(2, np.int32), root) for _ in range(set_size)]
            cus_out.append([tuple(int(v) for v in xcc_cu) for xcc_cu in received])
    result.per_iter_cus = cus_out
    return result


comm = Communicator()
local = run_transfer(4096) if comm.rank == EXECUTOR_RANK else TransferResult()
res = broadcast_tfr_result(comm, local, EXECUTOR_RANK)
bw = [res.num_bytes / (ms * 1e-3) / 1e9 for ms in res.per_iter_msec]
print("RESULT bytes", res.num_bytes, "GB/s", [round(b, 3) for b in bw], flush=True)
print("RESULT cus", [len(c) for c in res.per_iter_cus], res.per_iter_cus[-1], flush=True)

# Disaggregated context executor (fixed): the 'no request fits' gate is OR-reduced across TP ranks
# Source: https://github.com/NVIDIA/TensorRT-LLM/pull/14020 (port of a TensorRT-LLM
# tensor-parallel executor hang to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("tp",))
BLOCKS_PER_REQUEST = 2


class KVCacheManager:
    def __init__(self, num_blocks: int, send_latency: int):
        self.free_blocks = num_blocks
        self.in_flight = deque()  # (iteration when the send completes, blocks)
        self.send_latency = send_latency  # completion timing of the cache send differs per rank

    def start_send(self, it: int, blocks: int):
        self.in_flight.append((it + self.send_latency, blocks))

    def poll_completed(self, it: int):
        while self.in_flight and self.in_flight[0][0] <= it:
            self.free_blocks += self.in_flight.popleft()[1]


class CapacityScheduler:
    def __init__(self, kv: KVCacheManager):
        self.kv = kv

    def schedule(self, waiting: int) -> int:
        return min(waiting, self.kv.free_blocks // BLOCKS_PER_REQUEST)


class CacheTransceiver:
    def check_context_transfer_status(self, kv: KVCacheManager, it: int) -> int:
        # TP-collective: the ranks agree on which transfers completed everywhere
        kv.poll_completed(it)
        done = multihost_utils.process_allgather(np.array(len(kv.in_flight), np.int32))
        return int(np.asarray(done).max())


@jax.jit
def context_forward(w, x):
    return jnp.tanh(x @ w).sum()  # w is sharded over tp: the contraction all-reduces


class PyExecutor:
    def __init__(self, pid: int):
        self.kv = KVCacheManager(num_blocks=4, send_latency=1 + pid)
        self.scheduler = CapacityScheduler(self.kv)
        self.transceiver = CacheTransceiver()
        self.w = jax.device_put(jnp.ones((8, 4), jnp.float32) * 0.1, NamedSharding(MESH, P("tp", None)))
        self.waiting, self.log = 6, []

    def _executor_loop(self, iterations: int):
        for it in range(iterations):
            self.kv.poll_completed(it)
            num_fitting_reqs = self.scheduler.schedule(self.waiting)
            # every TP rank takes the same branch: if any rank has no room, all check the transfers
            local_counts = multihost_utils.process_allgather(np.array(num_fitting_reqs, np.int32))
            num_fitting_reqs = int(np.asarray(local_counts).min())
            if num_fitting_reqs == 0:
                pending = self.transceiver.check_context_transfer_status(self.kv, it)
                self.log.append(f"wait{pending}")
                continue
            x = jnp.ones((num_fitting_reqs, 8), jnp.float32)
            self.log.append(round(float(context_forward(self.w, x)), 4))
            self.kv.free_blocks -= num_fitting_reqs * BLOCKS_PER_REQUEST
            self.kv.start_send(it, num_fitting_reqs * BLOCKS_PER_REQUEST)
            self.waiting -= num_fitting_reqs


def main():
    executor = PyExecutor(jax.process_index())
    executor._executor_loop(iterations=6)
    print(f"RESULT log {executor.log}", flush=True)
    print(f"RESULT waiting {executor.waiting}", flush=True)


if __name__ == "__main__":
    main()

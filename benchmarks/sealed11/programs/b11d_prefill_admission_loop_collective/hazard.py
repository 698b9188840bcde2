# Prefill admission walks the waiting queue until the local KV pool is full, calling a cross-process progress check per request
# Source: https://github.com/sgl-project/sglang/pull/33029
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("tp",))
REPL = NamedSharding(MESH, P())
MAX_BATCH, HIDDEN = 3, 4


@dataclass
class Req:
    rid: int
    pages: int


class HiCache:
    def __init__(self, pages_per_tick):
        self.pages_per_tick = pages_per_tick  # this process's storage bandwidth
        self.tick = 0

    def check_prefetch_progress(self, req):
        loaded = min(req.pages, self.tick * self.pages_per_tick)
        remaining = multihost_utils.process_allgather(np.int32(req.pages - loaded))
        return int(np.max(remaining)) == 0


class Scheduler:
    def __init__(self, cache, pinned_slots):
        self.cache = cache
        self.max_running = 2
        self.pinned_slots = pinned_slots  # KV slots held by this process's host-cache backups
        self.waiting = [Req(i, p) for i, p in enumerate([1, 2, 2, 3, 1])]
        w = np.linspace(-0.5, 1.0, HIDDEN * 2 * jax.device_count(), dtype=np.float32).reshape(HIDDEN, -1)
        self.w = jax.device_put(w, NamedSharding(MESH, P(None, "tp")))
        self._forward = jax.jit(lambda w, x, m: jnp.sum(jnp.tanh(x @ w), axis=1) * m)

    def num_allocatable_reqs(self):
        return self.max_running - self.pinned_slots

    def get_new_batch_prefill(self):
        batch = []
        for req in self.waiting:
            if len(batch) >= self.num_allocatable_reqs():
                break
            if not self.cache.check_prefetch_progress(req):
                continue
            batch.append(req)
        return batch

    def run_batch(self, batch):
        x = np.zeros((MAX_BATCH, HIDDEN), np.float32)
        mask = np.zeros(MAX_BATCH, np.float32)
        for i, req in enumerate(batch):
            x[i] = (req.rid + 1) / 10.0
            mask[i] = 1.0
        out = self._forward(self.w, jax.make_array_from_process_local_data(REPL, x),
                            jax.make_array_from_process_local_data(REPL, mask))
        return [round(float(v), 4) for v in np.asarray(out)[: len(batch)]]

    def event_loop(self, max_ticks=12):
        log = []
        for _ in range(max_ticks):
            self.cache.tick += 1
            batch = self.get_new_batch_prefill()
            if batch:
                log.append(([r.rid for r in batch], self.run_batch(batch)))
                self.waiting = [r for r in self.waiting if r not in batch]
            if not self.waiting:
                break
        return log


def main():
    bandwidth, pinned = {0: (2, 0), 1: (1, 1)}[jax.process_index()]
    log = Scheduler(HiCache(bandwidth), pinned).event_loop()
    print("RESULT batches", [rids for rids, _ in log])
    print("RESULT outputs", [outs for _, outs in log])


if __name__ == "__main__":
    main()

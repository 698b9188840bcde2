# Hierarchical KV cache: a prefetch-progress check returns early for requests this process is not prefetching
# Source: https://github.com/sgl-project/sglang/pull/38284
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
ROWS = NamedSharding(MESH, P("tp"))


@dataclass
class Req:
    rid: str
    pages: tuple


class HiRadixCache:
    def __init__(self, host_pages, pages_per_tick=2):
        self.host_pages = set(host_pages)   # pages already in this process's host tier
        self.pages_per_tick = pages_per_tick
        self.ongoing_prefetch = {}          # rid -> [pages to load, pages loaded]

    def prefetch_from_storage(self, req):
        missing = [p for p in req.pages if p not in self.host_pages]
        if missing:
            self.ongoing_prefetch[req.rid] = [len(missing), 0]

    def advance(self):
        for entry in self.ongoing_prefetch.values():
            entry[1] = min(entry[0], entry[1] + self.pages_per_tick)

    def check_prefetch_progress(self, rid):
        if rid not in self.ongoing_prefetch:
            return True
        needed, loaded = self.ongoing_prefetch[rid]
        worst = int(np.max(multihost_utils.process_allgather(np.int32(needed - loaded))))
        if worst > 0:
            return False
        del self.ongoing_prefetch[rid]
        return True


class Scheduler:
    def __init__(self, cache):
        self.cache = cache
        self.waiting = []
        w = (np.arange(16, dtype=np.float32).reshape(4, 4) - 7.5) / 8.0
        self.w = jax.device_put(w, NamedSharding(MESH, P()))
        self._prefill = jax.jit(lambda w, x: jnp.sum(jnp.tanh(x @ w)))

    def add(self, req):
        self.cache.prefetch_from_storage(req)
        self.waiting.append(req)

    def run(self, max_ticks=10):
        done = []
        for tick in range(max_ticks):
            self.cache.advance()
            for req in list(self.waiting):
                if not self.cache.check_prefetch_progress(req.rid):
                    continue
                x = np.asarray(req.pages, np.float32).reshape(1, 4) / 10.0
                out = float(self._prefill(self.w, jax.make_array_from_process_local_data(ROWS, x)))
                done.append((req.rid, tick, round(out, 4)))
                self.waiting.remove(req)
            if not self.waiting:
                break
        return done


def main():
    # the request stream is identical everywhere; what each process's host tier already holds is not
    host = {0: [1, 2, 3, 4, 5], 1: [1, 2]}[jax.process_index()]
    sched = Scheduler(HiRadixCache(host))
    for rid, pages in [("a", (1, 2, 3, 4)), ("b", (2, 5, 6, 7))]:
        sched.add(Req(rid, pages))
    done = sched.run()
    print("RESULT scheduled", [(rid, tick) for rid, tick, _ in done])
    print("RESULT prefill", [out for _, _, out in done])


if __name__ == "__main__":
    main()

# A KV-cache pool backend is initialised lazily; the processes agree on readiness first and join the store together
# Source: https://github.com/vllm-project/vllm-ascend/issues/14121
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


@dataclass
class PoolConfig:
    num_blocks: int = 16
    block_tokens: int = 4
    segment_blocks: int = 6   # blocks the store must register when it joins the group
    hidden: int = 8


MESH = Mesh(np.array(jax.devices()), ("tp",))
ROWS = NamedSharding(MESH, P("tp"))
REPL = NamedSharding(MESH, P())


class MemCacheStore:
    """The distributed object store: joining registers this process's segment with every peer."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.segments = None

    def can_pin(self, free_blocks):
        return free_blocks >= self.cfg.segment_blocks

    def init(self, free_blocks):
        if not self.can_pin(free_blocks):
            return 1  # not enough free blocks to pin the segment on this process
        base = np.array([jax.process_index() * 1000 + free_blocks], np.int32)
        self.segments = np.asarray(multihost_utils.process_allgather(base)).reshape(-1)
        return 0


class KVPoolWorker:
    def __init__(self, cfg):
        self.cfg = cfg
        self.used_blocks = 0
        self.store = MemCacheStore(cfg)
        self.initialized = False
        w = np.arange(cfg.hidden * cfg.hidden, dtype=np.float32).reshape(cfg.hidden, cfg.hidden) / 64.0
        self.w = jax.device_put(w, REPL)
        self._prefill = jax.jit(lambda w, x: jnp.sum(jnp.tanh(x @ w)))

    def _lazy_init(self):
        free = self.cfg.num_blocks - self.used_blocks
        ready = np.int32(self.store.can_pin(free))
        if multihost_utils.process_allgather(ready).all():
            self.initialized = self.store.init(free) == 0

    def handle(self, prompt_len):
        self.used_blocks += -(-prompt_len // self.cfg.block_tokens)
        if not self.initialized:
            self._lazy_init()
        x = np.full((1, self.cfg.hidden), prompt_len / 100.0, np.float32)
        out = float(self._prefill(self.w, jax.make_array_from_process_local_data(ROWS, x)))
        self.used_blocks = max(0, self.used_blocks - 3)
        return out


def local_requests():
    # each TP worker's first request uses its own prompt, so its KV usage differs by construction
    return {0: [12, 8, 8, 8], 1: [44, 8, 8, 8]}[jax.process_index()]


def main():
    worker = KVPoolWorker(PoolConfig())
    outs = [round(worker.handle(n), 4) for n in local_requests()]
    seg = worker.store.segments
    print("RESULT segments", None if seg is None else seg.tolist())
    gathered = np.asarray(multihost_utils.process_allgather(np.array(outs, np.float32)))
    print("RESULT prefill_sums", np.round(gathered.reshape(-1), 4).tolist())


if __name__ == "__main__":
    main()

# Data-parallel serving engine: a DP rank that has run out of requests executes dummy batches without the batch-coordination all-reduce
# Source: https://github.com/vllm-project/vllm/issues/28224
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
from collections import deque
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
TOKENS = NamedSharding(MESH, P("dp"))
MAX_BATCH = 4


@dataclass
class Request:
    rid: int
    remaining: int


def requests_for_rank(rank):
    # the API server balanced by count, not by length: rank 1 got the short prompts
    lengths = [6, 5, 7, 4, 6] if rank == 0 else [2, 3, 2]
    return deque(Request(rank * 100 + i, n) for i, n in enumerate(lengths))


@jax.jit
def forward(tokens):
    hidden = jnp.tanh(tokens.astype(jnp.float32) * 0.01)
    return jnp.sum(hidden)          # the dense layers' all-reduce over the DP-sharded batch


class EngineCore:
    def __init__(self):
        self.rank = jax.process_index()
        self.waiting = requests_for_rank(self.rank)
        self.finished = 0
        self.steps = 0

    def has_unfinished_requests(self):
        return bool(self.waiting)

    def coordinate_batch_across_dp(self, num_tokens):
        counts = multihost_utils.process_allgather(np.array([num_tokens], np.int32))
        return int(np.max(counts))

    def run_forward(self, padded):
        local = np.zeros((padded,), np.int32)
        local[: len(self.batch_tokens)] = self.batch_tokens
        glob = jax.make_array_from_process_local_data(TOKENS, local)
        return float(forward(glob))

    def step(self):
        batch = [self.waiting.popleft() for _ in range(min(MAX_BATCH, len(self.waiting)))]
        self.batch_tokens = [r.rid for r in batch]
        padded = self.coordinate_batch_across_dp(len(batch))
        self.run_forward(padded)
        for r in batch:
            r.remaining -= 1
            if r.remaining > 0:
                self.waiting.append(r)
            else:
                self.finished += 1

    def execute_dummy_batch(self):
        self.batch_tokens = [0]
        self.run_forward(1)

    def wave_unfinished(self):
        flags = multihost_utils.process_allgather(np.array([self.has_unfinished_requests()], np.int32))
        return bool(np.any(flags))

    def run_busy_loop(self):
        while self.wave_unfinished():
            if self.has_unfinished_requests():
                self.step()
            else:
                self.execute_dummy_batch()
            self.steps += 1


def main():
    engine = EngineCore()
    engine.run_busy_loop()
    finished = multihost_utils.process_allgather(np.array([engine.finished], np.int32))
    print("RESULT engine_steps", engine.steps)
    print("RESULT finished_requests", int(np.sum(finished)))


if __name__ == "__main__":
    main()

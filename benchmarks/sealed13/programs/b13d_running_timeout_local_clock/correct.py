# Tensor-parallel scheduler that aborts requests past their running deadline as decided by tp rank 0 and broadcast
# Source: https://github.com/sgl-project/sglang/pull/27164
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("tp",))
REPLICATED = NamedSharding(MESH, P())
COLUMNS = NamedSharding(MESH, P(None, "tp"))
RUNNING_TIMEOUT_S = 1.5      # SGLANG_REQ_RUNNING_TIMEOUT
DETOKENIZER_RTT_S = 0.6      # tp rank 0 streams each step's tokens to the detokenizer
HIDDEN, VOCAB = 8, 16
MAX_RUNNING = 3


@dataclass
class Req:
    rid: int
    max_new_tokens: int
    start: float = 0.0
    output: list = field(default_factory=list)


@jax.jit
def decode_step(last_tokens, w_out):
    h = jax.nn.one_hot(last_tokens % HIDDEN, HIDDEN)
    logits = h @ w_out                        # column-parallel lm head: vocab shards all-gathered
    return jnp.argmax(logits, axis=-1)


class Scheduler:
    def __init__(self):
        self.tp_rank = jax.process_index()
        w = np.arange(HIDDEN * VOCAB, dtype=np.float32).reshape(HIDDEN, VOCAB) % 7
        cols = VOCAB // jax.process_count()
        self.w_out = jax.make_array_from_process_local_data(
            COLUMNS, w[:, self.tp_rank * cols:(self.tp_rank + 1) * cols], (HIDDEN, VOCAB))
        self.capture_batch_sizes(range(1, MAX_RUNNING + 1))
        t0 = float(multihost_utils.broadcast_one_to_all(np.float64(time.monotonic())))
        self.running = [Req(1, 3, t0), Req(2, 12, t0), Req(3, 5, t0)]
        self.aborted, self.finished = [], []

    def capture_batch_sizes(self, sizes):
        for bs in sizes:                          # like CUDA-graph capture: compile each batch size up front
            decode_step(jax.make_array_from_process_local_data(REPLICATED, np.zeros(bs, np.int32), (bs,)),
                        self.w_out).block_until_ready()

    def abort_on_running_timeout(self):
        now = time.monotonic()
        timed_out = [r.rid for r in self.running if now - r.start > RUNNING_TIMEOUT_S]
        slots = np.full((MAX_RUNNING,), -1, np.int32)
        slots[:len(timed_out)] = timed_out       # tp rank 0 decides, every rank aborts the same rids
        timed_out = [int(x) for x in multihost_utils.broadcast_one_to_all(slots) if x >= 0]
        self.running = [r for r in self.running if r.rid not in timed_out]
        self.aborted.extend(timed_out)

    def run_batch(self):
        last = np.array([r.output[-1] if r.output else r.rid for r in self.running], np.int32)
        tokens = jax.make_array_from_process_local_data(REPLICATED, last, last.shape)
        next_tokens = np.asarray(decode_step(tokens, self.w_out).addressable_data(0))
        for r, t in zip(self.running, next_tokens):
            r.output.append(int(t))
        self.finished.extend(r.rid for r in self.running if len(r.output) >= r.max_new_tokens)
        self.running = [r for r in self.running if len(r.output) < r.max_new_tokens]

    def stream_output(self):
        if self.tp_rank == 0:
            time.sleep(DETOKENIZER_RTT_S)

    def event_loop(self):
        steps = 0
        while self.running:
            self.abort_on_running_timeout()
            if self.running:
                self.run_batch()
                steps += 1
            self.stream_output()
        return steps


def main():
    sched = Scheduler()
    steps = sched.event_loop()
    print("RESULT decode_steps", steps)
    print("RESULT aborted", sorted(sched.aborted))
    print("RESULT finished", sorted(sched.finished))


if __name__ == "__main__":
    main()

# Inference scheduler: only the request-pulling rank (rank 0) runs the REQ_WAITING_TIMEOUT scan and the
# aborted request ids are broadcast, so every rank's waiting queue (and prefill vs decode) stays identical.
# Source: https://github.com/sgl-project/sglang/pull/37143
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import collections
import dataclasses
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("tp",))
HEADS = NamedSharding(MESH, P("tp"))
REQ_WAITING_TIMEOUT_S = 1.5
MAX_REQS = 8
HIDDEN = 8


@dataclasses.dataclass
class Req:
    rid: int
    prompt_len: int
    created: float = dataclasses.field(default_factory=time.monotonic)
    generated: int = 0


class Tokenizer:
    """Front end feeding the request-pulling rank (rank 0)."""

    def __init__(self):
        self.inbox = collections.deque(Req(rid=i, prompt_len=3 + i % 4) for i in range(6))

    def drain(self):
        out = list(self.inbox)
        self.inbox.clear()
        return out


@jax.jit
def prefill(w, tokens):
    return jnp.tanh(jnp.sum(tokens[:, None] * w, axis=0))      # reduction over the tp-sharded axis


@jax.jit
def decode(w, state):
    return jnp.tanh(state + jnp.mean(w))                       # scalar reduction over the tp shards


class Scheduler:
    def __init__(self):
        self.tokenizer = Tokenizer() if jax.process_index() == 0 else None
        self.waiting: list[Req] = []
        self.running: list[Req] = []
        self.finished: list[int] = []
        self.aborted: list[int] = []
        w_local = np.full((1, HIDDEN), 0.1 * (1 + jax.process_index()), np.float32)
        self.w = jax.make_array_from_process_local_data(HEADS, w_local)
        self.state = jnp.ones((HIDDEN,), jnp.float32)

    def recv_requests(self):
        reqs = self.tokenizer.drain() if self.tokenizer else []
        payload = np.full((MAX_REQS, 2), -1, np.int32)
        for i, r in enumerate(reqs):
            payload[i] = (r.rid, r.prompt_len)
        payload = np.asarray(multihost_utils.broadcast_one_to_all(payload))
        if jax.process_index() == 0:
            return reqs
        return [Req(int(rid), int(n)) for rid, n in payload if rid >= 0]

    def abort_timed_out(self):
        mask = np.zeros((4 * MAX_REQS,), np.int32)
        if jax.process_index() == 0:
            now = time.monotonic()
            for req in self.waiting:
                if now - req.created > REQ_WAITING_TIMEOUT_S:
                    mask[req.rid] = 1
        mask = np.asarray(multihost_utils.broadcast_one_to_all(mask))
        keep = []
        for req in self.waiting:
            if mask[req.rid]:
                self.aborted.append(req.rid)
            else:
                keep.append(req)
        self.waiting = keep

    def step(self):
        self.waiting.extend(self.recv_requests())
        self.abort_timed_out()
        if self.waiting:
            req = self.waiting.pop(0)
            tokens = jax.make_array_from_process_local_data(HEADS, np.full((1,), req.prompt_len, np.float32))
            self.state = prefill(self.w, tokens)
            self.running.append(req)
        elif self.running:
            self.state = decode(self.w, self.state)
            for req in self.running:
                req.generated += 1
            self.finished += [r.rid for r in self.running if r.generated >= 2]
            self.running = [r for r in self.running if r.generated < 2]
        time.sleep(0.4)   # the model forward of the real server

    def serve(self, num_iterations: int):
        for _ in range(num_iterations):
            self.step()
        return float(jnp.sum(self.state))


sched = Scheduler()
checksum = sched.serve(num_iterations=10)
print("RESULT finished", sorted(sched.finished), "aborted", sorted(sched.aborted))
print("RESULT checksum", round(checksum, 5))

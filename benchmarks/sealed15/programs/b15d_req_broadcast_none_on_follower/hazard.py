# SGLang-style scheduler request broadcast: follower ranks hold None instead of a request list and the broadcast helper measures len() of its local argument
# Source: https://github.com/sgl-project/sglang/issues/37590
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
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
TP_COLS = NamedSharding(MESH, P(None, "tp"))
REPL = NamedSharding(MESH, P())
MAX_REQS = 8


@dataclass
class Req:
    rid: int
    first_token: int
    max_new_tokens: int


class TokenizerInbox:
    """Requests arrive only at the leader's socket (attn_tp_rank 0 / attn_cp_rank 0)."""

    def __init__(self):
        self.script = {0: [Req(1, 3, 2), Req(2, 5, 3)], 1: [Req(3, 7, 1)], 2: [Req(4, 2, 2), Req(5, 9, 1), Req(6, 4, 3)]}

    def recv(self, step):
        return list(self.script.get(step, []))


def broadcast_pyobj(reqs, is_source):
    """Length header first, then a fixed-size padded payload, both from the source rank."""
    n = multihost_utils.broadcast_one_to_all(np.int32(len(reqs)), is_source=is_source)
    buf = np.zeros((MAX_REQS, 3), np.int32)
    if is_source:
        buf[:len(reqs)] = [[r.rid, r.first_token, r.max_new_tokens] for r in reqs]
    buf = np.asarray(multihost_utils.broadcast_one_to_all(buf, is_source=is_source))
    return [Req(*map(int, row)) for row in buf[:int(n)]]


@jax.jit
def decode_step(w, toks):
    logits = jax.nn.one_hot(toks, w.shape[0]) @ w          # w is tensor-parallel over columns
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


class Scheduler:
    def __init__(self):
        self.leader = jax.process_index() == 0
        self.inbox = TokenizerInbox()
        w = np.random.default_rng(7).normal(size=(16, 16)).astype(np.float32)
        self.w = jax.device_put(w, TP_COLS)

    def recv_requests(self, step):
        if self.leader:
            work_reqs = self.inbox.recv(step)
        else:
            work_reqs = None                 # only the leader holds a real list
        return broadcast_pyobj(work_reqs, is_source=self.leader)

    def run_batch(self, reqs):
        toks = np.zeros(MAX_REQS, np.int32)
        toks[:len(reqs)] = [r.first_token for r in reqs]
        toks = jax.device_put(toks, REPL)
        out = []
        for _ in range(max((r.max_new_tokens for r in reqs), default=0)):
            toks = decode_step(self.w, toks)
            out.append(np.asarray(toks)[:len(reqs)].tolist())
        return out


def main():
    sched = Scheduler()
    for step in range(3):
        reqs = sched.recv_requests(step)
        out = sched.run_batch(reqs)
        print(f"RESULT step{step} rids", [r.rid for r in reqs], "tokens", out)


if __name__ == "__main__":
    main()

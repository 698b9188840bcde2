# Multimodal scheduler: whether a request's image features must be fetched with a separate broadcast
# is decided from each rank's own copy of req.mm_inputs, which only the entry rank always has.
# Source: https://github.com/sgl-project/sglang/pull/36489
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("tp",))
TP = NamedSharding(MESH, P("tp"))
INLINE_MAX = 4          # small feature blocks travel inside the request broadcast
MAX_FEATURES = 12
MAX_BATCH = 4


@dataclasses.dataclass
class Req:
    rid: int
    n_tokens: int
    has_image: bool
    mm_inputs: np.ndarray | None = None


def encode_image(rid: int, n_patches: int) -> np.ndarray:
    rng = np.random.default_rng(rid)
    return rng.normal(size=(n_patches,)).astype(np.float32)


class RequestReceiver:
    """Rank 0 pulls requests from the tokenizer, runs the image processor and broadcasts metadata."""

    def __init__(self):
        self.pending = [(0, 5, 0), (1, 3, 3), (2, 4, 0), (3, 6, 10), (4, 2, 2), (5, 7, 12)]

    def recv_batch(self):
        batch = []
        if jax.process_index() == 0:
            batch, self.pending = self.pending[:2], self.pending[2:]
        payload = np.zeros((MAX_BATCH, 4 + INLINE_MAX), np.float32)
        payload[:, 0] = -1
        reqs = []
        for i, (rid, n_tokens, n_patches) in enumerate(batch):
            req = Req(rid, n_tokens, n_patches > 0)
            if req.has_image:
                req.mm_inputs = encode_image(rid, n_patches)
            payload[i, :4] = (rid, n_tokens, n_patches > 0, n_patches)
            if req.has_image and n_patches <= INLINE_MAX:
                payload[i, 4:4 + n_patches] = req.mm_inputs
            reqs.append(req)
        payload = np.asarray(multihost_utils.broadcast_one_to_all(payload))
        if jax.process_index() == 0:
            return reqs
        out = []
        for row in payload:
            if row[0] < 0:
                continue
            req = Req(int(row[0]), int(row[1]), bool(row[2]))
            n_patches = int(row[3])
            if req.has_image and n_patches <= INLINE_MAX:
                req.mm_inputs = row[4:4 + n_patches].copy()
            out.append(req)
        return out


@jax.jit
def forward(w, features):
    return jnp.tanh(jnp.sum(w * features))       # reduction over the tp-sharded feature axis


class Scheduler:
    def __init__(self):
        self.receiver = RequestReceiver()
        self.w = jax.make_array_from_process_local_data(TP, np.full((MAX_FEATURES // 2,), 0.2, np.float32))
        self.outputs = {}

    def _broadcast_mm_inputs(self, req: Req) -> np.ndarray:
        buf = np.zeros((MAX_FEATURES,), np.float32)
        if req.mm_inputs is not None:
            buf[:len(req.mm_inputs)] = req.mm_inputs
        return np.asarray(multihost_utils.broadcast_one_to_all(buf))

    def _features(self, req: Req) -> np.ndarray:
        if req.has_image and req.mm_inputs is None:
            req.mm_inputs = self._broadcast_mm_inputs(req)
        feats = np.zeros((MAX_FEATURES,), np.float32)
        if req.mm_inputs is not None:
            feats[:len(req.mm_inputs)] = req.mm_inputs[:MAX_FEATURES]
        feats[-1] = req.n_tokens
        return feats

    def run(self, iterations: int):
        for _ in range(iterations):
            for req in self.receiver.recv_batch():
                feats = self._features(req)
                local = feats.reshape(2, -1)[jax.process_index()]
                out = forward(self.w, jax.make_array_from_process_local_data(TP, local))
                self.outputs[req.rid] = round(float(out), 5)
        return self.outputs


outputs = Scheduler().run(iterations=3)
print("RESULT outputs", sorted(outputs.items()))

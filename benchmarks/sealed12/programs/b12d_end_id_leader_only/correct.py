# Tensor-parallel generation server: the leader forwards the request's end id too, so every rank stops at it
# Source: https://github.com/NVIDIA/TensorRT-LLM/issues/1767
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass
from typing import List, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("tp",))
COLUMNS = NamedSharding(MESH, P(None, "tp"))
REPLICATED = NamedSharding(MESH, P())
VOCAB = 8


@dataclass
class InferenceRequest:
    prompt: List[int]
    max_new_tokens: int
    end_id: Optional[int] = None


def is_leader():
    return jax.process_index() == 0


def receive_request():
    # the HTTP frontend lives on the leader; it forwards the request fields to the follower ranks
    if is_leader():
        req = InferenceRequest(prompt=[5, 6], max_new_tokens=8, end_id=7)
        fields = np.array([req.prompt[0], req.prompt[1], req.max_new_tokens, req.end_id], np.int32)
    else:
        req, fields = None, np.zeros(4, np.int32)
    fields = np.asarray(multihost_utils.broadcast_one_to_all(fields))
    if req is None:
        req = InferenceRequest(prompt=[int(fields[0]), int(fields[1])], max_new_tokens=int(fields[2]),
                               end_id=int(fields[3]))
    return req


class TPDecoder:
    def __init__(self):
        w = np.roll(np.eye(VOCAB, dtype=np.float32), 3, axis=1)  # token t -> t + 3 (mod vocab)
        self.w = jax.device_put(w, COLUMNS)  # lm head split column-wise over the TP ranks
        self._step = jax.jit(lambda w, last: jnp.argmax(jax.nn.one_hot(last, VOCAB) @ w, axis=-1),
                             out_shardings=REPLICATED)

    def step(self, last):
        return int(np.asarray(self._step(self.w, jnp.int32(last))))


def generate(decoder, req):
    last, out = req.prompt[-1], []
    for _ in range(req.max_new_tokens):
        tok = decoder.step(last)
        tok = int(multihost_utils.broadcast_one_to_all(np.int32(tok)))  # leader's sample is authoritative
        out.append(tok)
        if req.end_id is not None and tok == req.end_id:
            break
        last = tok
    return out


def main():
    decoder = TPDecoder()
    req = receive_request()
    tokens = generate(decoder, req)
    lengths = np.asarray(multihost_utils.process_allgather(np.int32(len(tokens)))).reshape(-1)
    print("RESULT output_lengths", lengths.tolist())
    print("RESULT tokens", tokens)


if __name__ == "__main__":
    main()

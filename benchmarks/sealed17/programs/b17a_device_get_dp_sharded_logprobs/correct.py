# Multi-host serving: the output processor gathers the dp-sharded arrays across processes before reading them
# Source: https://github.com/sgl-project/sglang-jax/issues/1400
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, HIDDEN, TOKENS_PER_DP = 32, 8, 4


class Request:
    def __init__(self, rid, prompt, return_logprob):
        self.rid, self.prompt, self.return_logprob = rid, prompt, return_logprob
        self.output_ids, self.input_token_logprobs = [], None


@jax.jit
def forward(embed, token_ids):
    h = jnp.tanh(embed[token_ids])
    logits = h @ embed.T
    logp = jax.nn.log_softmax(logits, axis=-1)
    next_ids = jnp.argmax(logits, axis=-1)
    token_logp = jnp.take_along_axis(logp, next_ids[:, None], axis=-1)[:, 0]
    return next_ids, token_logp


def to_host(x):
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(jax.device_get(x))


def materialize_logprobs(input_token_logprobs):
    return to_host(input_token_logprobs)


def process_batch_result(reqs, next_ids, token_logprobs):
    host_ids = materialize_logprobs(next_ids)
    host_logprobs = materialize_logprobs(token_logprobs) if any(r.return_logprob for r in reqs) else None
    for i, req in enumerate(reqs):
        req.output_ids.append(int(host_ids[i]))
        if req.return_logprob:
            req.input_token_logprobs = float(host_logprobs[i])


def main():
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    dp_sharding = NamedSharding(mesh, P("dp"))
    embed = jax.device_put(jnp.asarray(np.sin(np.arange(VOCAB * HIDDEN, dtype=np.float32)).reshape(VOCAB, HIDDEN)),
                           NamedSharding(mesh, P()))
    # the same request list is scheduled on every node; each dp rank runs its slice of the batch
    n = TOKENS_PER_DP * jax.process_count()
    reqs = [Request(f"r{i}", prompt=3 * i + 1, return_logprob=(i % 2 == 0)) for i in range(n)]
    tokens = np.array([r.prompt % VOCAB for r in reqs], np.int32)
    lo = jax.process_index() * TOKENS_PER_DP
    ids = jax.make_array_from_process_local_data(dp_sharding, tokens[lo:lo + TOKENS_PER_DP])
    for _ in range(2):
        next_ids, token_logp = jax.jit(forward, out_shardings=(dp_sharding, dp_sharding))(embed, ids)
        process_batch_result(reqs, next_ids, token_logp)
        ids = next_ids
    print("RESULT outputs", [r.output_ids for r in reqs])
    print("RESULT logprobs", [round(r.input_token_logprobs, 4) for r in reqs if r.return_logprob])


if __name__ == "__main__":
    main()

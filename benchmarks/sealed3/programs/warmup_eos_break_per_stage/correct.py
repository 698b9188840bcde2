# Pipeline-parallel warmup bans EOS so every rank generates exactly max_tokens warmup tokens
# Source: https://github.com/exo-explore/exo/issues/1793
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("stage",))
N_STAGES = jax.device_count()
VOCAB, DIM = 16, 8
EOS_TOKEN_IDS = [12]


class PipelineModel:
    """Each process holds one stage; the hidden state is sent to the next stage every token."""

    def __init__(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.embed = jax.device_put(rng.normal(size=(VOCAB, DIM)).astype(np.float32),
                                    NamedSharding(MESH, P()))
        self.layers = jax.device_put(rng.normal(size=(N_STAGES, DIM, DIM)).astype(np.float32) / 2,
                                     NamedSharding(MESH, P("stage")))
        self.lm_head = jax.device_put(rng.normal(size=(DIM, VOCAB)).astype(np.float32),
                                      NamedSharding(MESH, P()))

    def __call__(self, token: int) -> np.ndarray:
        logits = _pipeline_step(self.embed, self.layers, self.lm_head, np.int32(token))
        return np.asarray(logits.addressable_data(0))[0]  # this rank's stage output


@jax.jit
def _pipeline_step(embed, layers, lm_head, token):
    @partial(jax.shard_map, mesh=MESH, in_specs=(P(), P("stage"), P(), P()), out_specs=P("stage"))
    def stages(embed, layer, lm_head, token):
        h = embed[token][None]
        for s in range(N_STAGES):
            out = jnp.tanh(h @ layer[0])
            h = jax.lax.ppermute(out, "stage", [(i, (i + 1) % N_STAGES) for i in range(N_STAGES)])
        return out @ lm_head
    return stages(embed, layers, lm_head, token)


def make_sampler(temp: float = 0.0):
    return lambda logits: int(np.argmax(logits))


def stream_generate(model, prompt: list[int], max_tokens: int, sampler, logits_processors=()):
    token = prompt[-1]
    for _ in range(max_tokens):
        logits = model(token)
        for proc in logits_processors:
            logits = proc(logits)
        token = sampler(logits)
        if token in EOS_TOKEN_IDS:
            break
        yield token


def ban_token_ids(token_ids):
    def proc(logits):
        logits = logits.copy()
        logits[list(token_ids)] = -1e9
        return logits
    return proc


def warmup_inference(model) -> int:
    sampler = make_sampler(temp=0.0)
    multihost_utils.sync_global_devices("warmup_start")
    tokens_generated = 0
    for _ in stream_generate(model, prompt=[5, 9, 2], max_tokens=5, sampler=sampler,
                             logits_processors=[ban_token_ids(EOS_TOKEN_IDS)]):
        tokens_generated += 1
    multihost_utils.sync_global_devices("warmup_done")
    return tokens_generated


print("RESULT warmup_tokens", warmup_inference(PipelineModel()))

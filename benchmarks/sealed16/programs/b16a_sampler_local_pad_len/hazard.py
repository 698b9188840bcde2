# Gemma-style multi-host sampler: each host pads its own prompts to the longest prompt it read, not the longest across hosts
# Source: https://github.com/google-deepmind/gemma/commit/f0afd7816a44db2e75c73135129db6daa5f4d4a1
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, EMBED, PAD_ID = 32, 8, 0
HOST_PROMPTS = {  # each host reads a different slice of the prompt file
    0: ["hi there", "jax"],
    1: ["multi host sampling", "pad me please"],
}


class CharTokenizer:
    def encode(self, text):
        return [1 + (ord(c) % (VOCAB - 1)) for c in text]

    def decode(self, ids):
        return "".join(chr(ord("a") + int(i) % 26) for i in ids if i != PAD_ID)


def pad(tokens, max_length):
    out = np.full((len(tokens), max_length), PAD_ID, np.int32)
    for i, t in enumerate(tokens):
        out[i, :len(t)] = t
    return out


class Sampler:
    def __init__(self, params, tokenizer, mesh):
        self.params, self.tokenizer = params, tokenizer
        self.sharding = NamedSharding(mesh, P("data", None))

    def sample(self, prompts, max_new_tokens=4):
        tokens = [self.tokenizer.encode(p) for p in prompts]
        max_prompt_len = max(len(t) for t in tokens)
        local = pad(tokens, max_length=max_prompt_len)
        global_tokens = jax.make_array_from_process_local_data(self.sharding, local)
        predicted = _generate(self.params, global_tokens, max_new_tokens)
        # Each host only holds a slice of the batch: gather so every host can decode all texts.
        predicted = np.asarray(multihost_utils.process_allgather(predicted, tiled=True))
        return [self.tokenizer.decode(t[-max_new_tokens:]) for t in predicted]


def _generate(params, tokens, max_new_tokens):
    @jax.jit
    def step(params, tokens):
        mask = (tokens != PAD_ID)[..., None]
        ctx = jnp.sum(params["embed"][tokens] * mask, axis=1) / jnp.maximum(mask.sum(axis=1), 1)
        logits = ctx @ params["embed"].T
        logits = logits - jnp.mean(logits)  # centered over the whole (global) batch
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)

    for _ in range(max_new_tokens):
        nxt = step(params, tokens)
        tokens = jnp.concatenate([tokens, nxt[:, None]], axis=1)  # prompt + completion buffer
    return tokens


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    embed = np.random.default_rng(0).normal(size=(VOCAB, EMBED)).astype(np.float32)
    params = {"embed": jax.device_put(embed, NamedSharding(mesh, P()))}
    sampler = Sampler(params, CharTokenizer(), mesh)
    texts = sampler.sample(HOST_PROMPTS[jax.process_index()])
    print("RESULT sampled", texts)


if __name__ == "__main__":
    main()

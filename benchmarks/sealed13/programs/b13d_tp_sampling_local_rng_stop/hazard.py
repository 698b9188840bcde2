# Tensor-parallel reference generator that samples the next token independently on every rank and stops at a stop token
# Source: https://github.com/openai/gpt-oss/issues/270
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
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
COLS = NamedSharding(MESH, P(None, "tp"))
ROWS = NamedSharding(MESH, P("tp", None))
VOCAB, DIM, FFN = 8, 8, 16
STOP_TOKENS = (0,)


@dataclass
class ModelConfig:
    sampling_seed: int = 1234
    max_tokens: int = 24


def init_weights():
    rng = np.random.default_rng(0)
    return {"embed": rng.normal(size=(VOCAB, DIM)).astype(np.float32) * 0.3,
            "w_in": rng.normal(size=(DIM, FFN)).astype(np.float32) * 0.3,
            "w_out": rng.normal(size=(FFN, VOCAB)).astype(np.float32) * 0.3}


def shard(w, sharding, axis):
    n, r = jax.process_count(), jax.process_index()
    size = w.shape[axis] // n
    local = np.take(w, np.arange(r * size, (r + 1) * size), axis=axis)
    return jax.make_array_from_process_local_data(sharding, local, w.shape)


@jax.jit
def forward(embed, w_in, w_out, token, pos):
    x = embed[token] + 0.1 * pos
    h = jax.nn.gelu(x @ w_in)          # column-parallel MLP ...
    return h @ w_out                   # ... row-parallel output: all-reduced over tp


class TokenGenerator:
    def __init__(self, cfg):
        w = init_weights()
        self.embed = jnp.asarray(w["embed"])
        self.w_in, self.w_out = shard(w["w_in"], COLS, 1), shard(w["w_out"], ROWS, 0)
        self.cfg = cfg
        self.sampling_rng = np.random.default_rng(cfg.sampling_seed + jax.process_index())

    def sample(self, logits, temperature):
        probs = np.asarray(jax.nn.softmax(logits / temperature), np.float64)
        return int(self.sampling_rng.choice(VOCAB, p=probs / probs.sum()))

    def generate(self, prompt, temperature=1.0):
        tokens = list(prompt)
        for pos in range(self.cfg.max_tokens):
            logits = forward(self.embed, self.w_in, self.w_out, tokens[-1], pos)
            predicted = self.sample(logits, temperature)
            tokens.append(predicted)
            if predicted in STOP_TOKENS:
                break
        return tokens[len(prompt):]


def main():
    gen = TokenGenerator(ModelConfig())
    out = gen.generate([3, 5, 2])
    print("RESULT completion", out)
    print("RESULT completion_len", len(out))


if __name__ == "__main__":
    main()

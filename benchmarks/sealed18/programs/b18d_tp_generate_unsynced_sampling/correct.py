# Tensor-parallel causal LM: sampled decoding where process 0 draws the next token and shares it
# Source: https://github.com/huggingface/transformers/issues/36634
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, HIDDEN, FFN = 64, 32, 64


@dataclass
class GenerationConfig:
    max_new_tokens: int = 10
    do_sample: bool = True
    temperature: float = 1.0
    top_k: int = 32


class TPCausalLM:
    def __init__(self, mesh):
        rng = np.random.default_rng(1234)
        self.mesh = mesh
        self.rep = NamedSharding(mesh, P())
        w_up = rng.standard_normal((HIDDEN, FFN)).astype(np.float32) * 0.3
        w_down = rng.standard_normal((FFN, HIDDEN)).astype(np.float32) * 0.3
        self.embed = jax.device_put(rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32), self.rep)
        self.w_up = jax.make_array_from_callback(w_up.shape, NamedSharding(mesh, P(None, "tp")), lambda i: w_up[i])
        self.w_down = jax.make_array_from_callback(w_down.shape, NamedSharding(mesh, P("tp", None)), lambda i: w_down[i])
        self._forward = jax.jit(self._logits, out_shardings=self.rep)

    @staticmethod
    def _logits(ids, embed, w_up, w_down):
        h = embed[ids]
        ctx = jnp.mean(h, axis=0) + h[-1]
        ctx = ctx + jax.nn.gelu(ctx @ w_up) @ w_down
        return (ctx @ embed.T) / HIDDEN

    def __call__(self, input_ids):
        ids = jax.make_array_from_process_local_data(self.rep, np.asarray(input_ids, np.int32))
        return np.asarray(self._forward(ids, self.embed, self.w_up, self.w_down).addressable_shards[0].data)


class Sampler:
    def __init__(self, config):
        self.config = config
        self.rng = np.random.default_rng()

    def __call__(self, logits):
        if not self.config.do_sample:
            return int(np.argmax(logits))
        logits = logits / self.config.temperature
        kth = np.sort(logits)[-self.config.top_k]
        logits = np.where(logits < kth, -np.inf, logits)
        probs = np.exp(logits - logits.max())
        return int(self.rng.choice(VOCAB, p=probs / probs.sum()))


def generate(model, prompt, config):
    sampler = Sampler(config)
    input_ids = list(prompt)
    for _ in range(config.max_new_tokens):
        logits = model(input_ids)
        next_token = sampler(logits)
        next_token = int(multihost_utils.broadcast_one_to_all(np.array(next_token, np.int32)))
        input_ids.append(next_token)
    return input_ids[len(prompt):]


def main():
    mesh = Mesh(np.array(jax.devices()), ("tp",))
    model = TPCausalLM(mesh)
    prompts = [[5, 17, 42, 8], [33, 1, 29]]
    for i, prompt in enumerate(prompts):
        completion = generate(model, prompt, GenerationConfig())
        final_logits = model(prompt + completion)
        print(f"RESULT completion_{i}", completion)
        print(f"RESULT final_logit_max_{i}", round(float(final_logits.max()), 2))


if __name__ == "__main__":
    main()

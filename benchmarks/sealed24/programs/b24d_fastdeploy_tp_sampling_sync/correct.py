import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, HIDDEN, EOS_TOKEN_ID = 32, 16, 2


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 0.9
    max_tokens: int = 10


class Sampler:
    def __init__(self):
        self.rng = np.random.default_rng()

    def __call__(self, logits, params):
        probs = np.asarray(jax.nn.softmax(jnp.asarray(logits) / params.temperature, -1), np.float64)
        order = np.argsort(-probs, axis=-1)
        next_tokens = np.empty(probs.shape[0], dtype=np.int32)
        for b in range(probs.shape[0]):
            p = probs[b, order[b]]
            keep = np.cumsum(p) - p < params.top_p
            p = np.where(keep, p, 0.0)
            next_tokens[b] = order[b][self.rng.choice(len(p), p=p / p.sum())]
        return next_tokens


class XPUModelRunner:
    """Tensor-parallel runner: each rank holds a column slice of the MLP, partial logits are all-reduced."""

    def __init__(self, tensor_parallel_rank, tensor_parallel_size):
        rng = np.random.default_rng(2024)
        emb = rng.normal(size=(VOCAB, HIDDEN)).astype(np.float32)
        w = rng.normal(size=(HIDDEN, VOCAB)).astype(np.float32) * 0.5
        cols = np.array_split(np.arange(HIDDEN), tensor_parallel_size)[tensor_parallel_rank]
        self.tp_rank = tensor_parallel_rank
        self.embed, self.lm_head = jnp.asarray(emb[:, cols]), jnp.asarray(w[cols])
        self.sampler = Sampler()
        self._partial_logits = jax.jit(lambda e, w, ids: jnp.tanh(e[ids].mean(1)) @ w)

    def _forward(self, input_ids):
        partial = np.asarray(self._partial_logits(self.embed, self.lm_head, jnp.asarray(input_ids)))
        return np.asarray(multihost_utils.process_allgather(partial)).sum(0)

    def execute_model(self, share_inputs, params):
        logits = self._forward(share_inputs["input_ids"])
        sampled_token_ids = self.sampler(logits, params)
        sampled_token_ids = np.asarray(multihost_utils.broadcast_one_to_all(sampled_token_ids,
                                                                            is_source=self.tp_rank == 0))
        return sampled_token_ids

    def generate(self, prompts, params):
        share_inputs = {"input_ids": np.array(prompts, dtype=np.int32)}
        outputs = [[] for _ in prompts]
        stopped = np.zeros(len(prompts), dtype=bool)
        for _ in range(params.max_tokens):
            next_tokens = self.execute_model(share_inputs, params)
            next_tokens = np.where(stopped, EOS_TOKEN_ID, next_tokens)
            for b, t in enumerate(next_tokens):
                if not stopped[b]:
                    outputs[b].append(int(t))
            stopped |= next_tokens == EOS_TOKEN_ID
            if stopped.all():
                break
            share_inputs["input_ids"] = np.concatenate([share_inputs["input_ids"], next_tokens[:, None]], 1)
        return outputs


def main():
    runner = XPUModelRunner(jax.process_index(), jax.process_count())
    prompts = [[5, 11, 7, 30], [19, 4, 4, 8]]
    outputs = runner.generate(prompts, SamplingParams())
    lengths = np.asarray(multihost_utils.process_allgather(np.int32(sum(len(o) for o in outputs))))
    for i, out in enumerate(outputs):
        print(f"RESULT completion[{i}]", out)
    print("RESULT generated_tokens_per_rank", lengths.tolist())


if __name__ == "__main__":
    main()

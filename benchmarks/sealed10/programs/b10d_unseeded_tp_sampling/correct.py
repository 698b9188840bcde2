# Tensor-parallel decode: every process samples the next token from a generator with the same default seed (0)
# Source: https://github.com/vllm-project/vllm/pull/17929
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from dataclasses import dataclass
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, HIDDEN = 32, 16


@dataclass
class ModelConfig:
    model: str = "tiny-lm"
    tensor_parallel_size: int = 2
    seed: Optional[int] = 0


@dataclass
class SamplingParams:
    temperature: float = 1.0
    max_tokens: int = 8


class TPWorker:
    """One tensor-parallel worker; the LM head is split over the vocabulary across processes."""

    def __init__(self, cfg: ModelConfig, mesh):
        self.mesh = mesh
        self.replicated = NamedSharding(mesh, P())
        weights = np.random.default_rng(1234)  # the checkpoint: identical on every worker
        self.embed = jax.device_put(weights.normal(0, 0.3, (VOCAB, HIDDEN)).astype(np.float32), self.replicated)
        self.lm_head = jax.device_put(weights.normal(0, 0.3, (HIDDEN, VOCAB)).astype(np.float32),
                                      NamedSharding(mesh, P(None, "tp")))
        self.generator = np.random.default_rng(cfg.seed)
        self._logits = jax.jit(self._forward, out_shardings=self.replicated)

    @staticmethod
    def _forward(embed, lm_head, ids, length):
        mask = (jnp.arange(ids.shape[0]) < length)[:, None]
        h = jnp.tanh(jnp.sum(embed[ids] * mask, axis=0) / length)
        return h @ lm_head  # vocab-parallel matmul, gathered to every worker

    def sample(self, logits, params: SamplingParams):
        probs = np.exp((logits - logits.max()) / params.temperature)
        probs /= probs.sum()
        return int(self.generator.choice(VOCAB, p=probs))

    def generate(self, prompt, params: SamplingParams):
        ids = np.zeros((len(prompt) + params.max_tokens,), np.int32)
        ids[:len(prompt)] = prompt
        length = len(prompt)
        while length < len(ids):
            g_ids = jax.make_array_from_process_local_data(self.replicated, ids)
            logits = np.asarray(self._logits(self.embed, self.lm_head, g_ids, length).addressable_data(0))
            ids[length] = self.sample(logits.astype(np.float64), params)
            length += 1
        return ids[len(prompt):].tolist()


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("tp",), axis_types=(jax.sharding.AxisType.Auto,))
    worker = TPWorker(ModelConfig(), mesh)
    for i, prompt in enumerate([[1, 5, 9], [2, 7]]):
        out = worker.generate(prompt, SamplingParams())
        print("RESULT completion", i, out)


main()

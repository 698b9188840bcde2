# ZeRO-3 style sharded model: generation stops on local EOS while other ranks still gather params
# Source: https://github.com/deepspeedai/DeepSpeed/issues/8262
# Port to multi-process JAX of a DeepSpeed ZeRO-3 rollout deadlock (HF generate without synced_gpus).
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp"))
REPLICATED = NamedSharding(MESH, P())
VOCAB = 12


@dataclass
class GenerationConfig:
    max_new_tokens: int = 10
    eos_token_id: int = VOCAB - 1


@partial(jax.jit, out_shardings=REPLICATED)
def _all_gather(w):
    # the ZeRO-3 parameter fetch: every rank must enter it for every forward
    return w * 1.0


def fetch_full(w) -> np.ndarray:
    return np.asarray(_all_gather(w).addressable_data(0))


class Zero3Module:
    """Parameters live partitioned over ranks; a pre-forward hook gathers them."""

    def __init__(self, weight: np.ndarray):
        self.partitioned = jax.device_put(weight, SHARDED)
        self.fetches = 0

    def _pre_forward_hook(self) -> np.ndarray:
        self.fetches += 1
        return fetch_full(self.partitioned)

    def forward(self, last_token: int) -> np.ndarray:
        full = self._pre_forward_hook()
        return full[last_token]

    def generate(self, prompt: list, config: GenerationConfig) -> list:
        tokens = list(prompt)
        for _ in range(config.max_new_tokens):
            logits = self.forward(tokens[-1])
            next_token = int(np.argmax(logits))
            tokens.append(next_token)
            if next_token == config.eos_token_id:
                break  # stop at EOS
        return tokens


@jax.jit
def teacher_score(batch):
    return jnp.sum(batch * jnp.arange(batch.shape[1]))


def rollout_step(student: Zero3Module, prompts: dict, config: GenerationConfig) -> float:
    seq = student.generate(prompts[jax.process_index()], config)
    padded = np.zeros((1, 16), np.float32)
    padded[0, :len(seq)] = seq
    batch = jax.make_array_from_process_local_data(SHARDED, padded)
    return float(teacher_score(batch))


chain = np.zeros((VOCAB, VOCAB), np.float32)
for i in range(VOCAB):
    chain[i, min(i + 1, VOCAB - 1)] = 1.0
student = Zero3Module(chain)
# different prompts on each data-parallel rank, as in the report
prompts = {0: [3, 7], 1: [1, 2]}
config = GenerationConfig()
scores = [rollout_step(student, prompts, config) for _ in range(2)]
fetches = multihost_utils.process_allgather(np.int32(student.fetches))
print("RESULT scores", [round(s, 2) for s in scores])
print("RESULT fetches", fetches.tolist())

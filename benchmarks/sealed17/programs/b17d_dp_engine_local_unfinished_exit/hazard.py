# Offline data-parallel generation: each DP engine loops while it has local unfinished requests, but every step is a global MoE forward
# Source: https://github.com/vllm-project/vllm/issues/18932
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class SamplingParams:
    max_tokens: int


@dataclass
class DPConfig:
    hidden: int = 4
    max_num_seqs: int = 2
    # prompts split by DP rank as in the offline data_parallel example: rank 0 short, rank 1 long outputs
    prompts_per_rank: dict = field(default_factory=lambda: {0: [SamplingParams(2), SamplingParams(1)],
                                                             1: [SamplingParams(5), SamplingParams(3)]})


def ep_forward(x, w):
    # expert-parallel layer: tokens of all DP ranks are dispatched together
    return jnp.sum(jnp.tanh(x @ w), axis=1)


class LLMEngine:
    def __init__(self, cfg, rank, mesh):
        self.cfg = cfg
        self.requests = [[p.max_tokens, 0] for p in cfg.prompts_per_rank[rank]]
        self.sharding = NamedSharding(mesh, P("dp", None))
        self.w = jnp.asarray(np.eye(cfg.hidden, dtype=np.float32) * 0.5)
        self.forward = jax.jit(ep_forward)
        self.steps = 0

    def has_unfinished_requests(self):
        return any(done < target for target, done in self.requests)

    def has_unfinished_requests_dp(self, has_unfinished):
        flags = multihost_utils.process_allgather(np.array([int(has_unfinished)], np.int32))
        return bool(np.asarray(flags).any())

    def step(self):
        x = np.zeros((self.cfg.max_num_seqs, self.cfg.hidden), np.float32)
        for i, (target, done) in enumerate(self.requests):
            if done < target:
                x[i] = (done + 1) / 4.0
                self.requests[i][1] += 1
        out = self.forward(jax.make_array_from_process_local_data(self.sharding, x), self.w)
        self.steps += 1
        return float(jnp.sum(out))


def generate(engine):
    total = 0.0
    while engine.has_unfinished_requests():
        total += engine.step()
    return total


def main():
    cfg = DPConfig()
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    engine = LLMEngine(cfg, jax.process_index(), mesh)
    total = generate(engine)
    generated = multihost_utils.process_allgather(
        np.array([sum(done for _, done in engine.requests)], np.int32)).reshape(-1)
    print("RESULT engine_steps", engine.steps)
    print("RESULT generated_tokens", [int(g) for g in generated], "total", round(total, 4))


if __name__ == "__main__":
    main()

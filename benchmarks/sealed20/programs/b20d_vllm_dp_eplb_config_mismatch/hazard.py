# Data-parallel MoE serving engines with an expert-parallel load balancer (EPLB). The leader node
# and the headless node are started from their own launch command lines.
import argparse
import os
import shlex
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

LAUNCH_COMMANDS = {
    "leader": "vllm serve moe-lite --data-parallel-size 2 --enable-eplb --eplb-log-balancedness "
              "--eplb-step-interval 4",
    "headless": "vllm serve moe-lite --data-parallel-size 2 --enable-eplb --eplb-step-interval 4 --headless",
}


@dataclass
class ParallelConfig:
    data_parallel_size: int
    enable_eplb: bool
    log_balancedness: bool
    step_interval: int


def parse_engine_args(argv):
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--data-parallel-size", type=int, default=1)
    p.add_argument("--enable-eplb", action="store_true")
    p.add_argument("--eplb-log-balancedness", action="store_true")
    p.add_argument("--eplb-step-interval", type=int, default=8)
    p.add_argument("--headless", action="store_true")
    a = p.parse_args(argv)
    return ParallelConfig(a.data_parallel_size, a.enable_eplb, a.eplb_log_balancedness, a.eplb_step_interval)


class EplbState:
    def __init__(self, num_experts, config):
        self.config = config
        self.expert_load = np.zeros(num_experts, dtype=np.float32)
        self.mapping = np.arange(num_experts)
        self.steps = 0

    def step(self, local_load):
        self.expert_load += local_load
        self.steps += 1
        if self.config.log_balancedness:
            per_rank = np.asarray(multihost_utils.process_allgather(local_load))
            total = per_rank.sum(axis=1)
            print(f"eplb step {self.steps}: balancedness={total.mean() / max(total.max(), 1):.3f}")
        if self.steps % self.config.step_interval == 0:
            self.rearrange()

    def rearrange(self):
        global_load = np.asarray(multihost_utils.process_allgather(self.expert_load)).sum(axis=0)
        self.mapping = np.argsort(-global_load, kind="stable")
        self.expert_load[:] = 0


class MoEEngine:
    def __init__(self, config, rank, num_experts=8, hidden=16):
        self.config = config
        self.rank = rank
        key = jax.random.PRNGKey(0)
        self.router = jax.random.normal(key, (hidden, num_experts))
        self.eplb = EplbState(num_experts, config) if config.enable_eplb else None
        self.route = jax.jit(lambda w, x: jnp.argmax(x @ w, axis=-1))

    def sync_num_tokens(self, num_tokens):
        return int(np.asarray(multihost_utils.process_allgather(np.int32(num_tokens))).max())

    def execute_step(self, step, tokens):
        padded = self.sync_num_tokens(len(tokens))
        batch = np.zeros((padded, tokens.shape[1]), dtype=np.float32)
        batch[: len(tokens)] = tokens
        experts = np.asarray(self.route(self.router, batch))[: len(tokens)]
        local_load = np.bincount(experts, minlength=self.router.shape[1]).astype(np.float32)
        if self.eplb is not None:
            self.eplb.step(local_load)
        return padded


def main():
    rank = jax.process_index()
    role = "leader" if rank == 0 else "headless"
    config = parse_engine_args(shlex.split(LAUNCH_COMMANDS[role])[2:])
    engine = MoEEngine(config, rank)
    rng = np.random.default_rng(7 + rank)
    padded_total = 0
    for step in range(12):
        tokens = rng.normal(size=(int(rng.integers(3, 9)), 16)).astype(np.float32)
        padded_total += engine.execute_step(step, tokens)
    print("RESULT padded_tokens", padded_total)
    print("RESULT expert_mapping", engine.eplb.mapping.tolist())


if __name__ == "__main__":
    main()

# MoE data-parallel engine: a DP rank with no scheduled tokens still runs a dummy step so it joins the step's collectives
# Source: https://github.com/vllm-project/vllm/issues/43547
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class EngineConfig:
    hidden: int = 4
    num_experts: int = 4
    token_budget: int = 2


MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPLICATED = NamedSharding(MESH, P())


def moe_forward(router, experts, x):
    expert = jnp.argmax(x @ router, axis=-1)
    all_out = jnp.einsum("th,ehk->tek", x, experts)
    return jnp.take_along_axis(all_out, expert[:, None, None], axis=1)[:, 0].sum(-1)


class Scheduler:
    def __init__(self, requests, budget):
        self.waiting = [list(toks) for toks in requests]
        self.budget = budget

    def has_unfinished(self):
        return any(self.waiting)

    def schedule(self):
        tokens = []
        for req in self.waiting:
            while req and len(tokens) < self.budget:
                tokens.append(req.pop(0))
        return np.array(tokens, np.int32)


class MoEModelRunner:
    def __init__(self, cfg):
        rng = np.random.default_rng(0)
        self.cfg = cfg
        self.router = jax.device_put(rng.normal(size=(cfg.hidden, cfg.num_experts)).astype(np.float32), REPLICATED)
        experts = rng.normal(size=(cfg.num_experts, cfg.hidden, cfg.hidden)).astype(np.float32)
        self.experts = jax.device_put(experts, ROWS)  # expert parallel: each DP rank holds half the experts
        self._forward = jax.jit(moe_forward)

    def coordinate_batch_across_dp(self, num_tokens):
        counts = multihost_utils.process_allgather(np.int32(num_tokens))
        return max(int(np.max(counts)), 1)

    def _run(self, tokens):
        padded = self.coordinate_batch_across_dp(len(tokens))
        x = np.zeros((padded, self.cfg.hidden), np.float32)
        x[np.arange(len(tokens)), tokens % self.cfg.hidden] = 1.0 + tokens / 10.0
        out = self._forward(self.router, self.experts, jax.make_array_from_process_local_data(ROWS, x))
        local = multihost_utils.global_array_to_host_local_array(out, MESH, P("dp"))
        return np.asarray(local)[:len(tokens)]

    def execute_model(self, tokens):
        if len(tokens) == 0:
            self._run(tokens)  # dummy run: join the DP batch coordination and the MoE forward
            return np.zeros(0, np.float32)
        return self._run(tokens)


def local_requests():
    # each DP engine core receives its own requests from the front-end load balancer
    return {0: [[3, 5, 7, 2], [4, 6, 1], [8, 9]], 1: [[2, 3]]}[jax.process_index()]


def main():
    cfg = EngineConfig()
    scheduler = Scheduler(local_requests(), cfg.token_budget)
    runner = MoEModelRunner(cfg)
    outputs, steps = [], 0
    while True:
        # DP wave: keep stepping while any engine core still has work
        busy = multihost_utils.process_allgather(np.int32(scheduler.has_unfinished()))
        if not np.any(busy):
            break
        outputs.extend(runner.execute_model(scheduler.schedule()).tolist())
        steps += 1
    checksum = np.float32(round(float(np.sum(outputs)), 4))
    all_sums = np.asarray(multihost_utils.process_allgather(checksum)).reshape(-1)
    print("RESULT engine_steps", steps)
    print("RESULT output_checksums", [round(float(v), 4) for v in all_sums])


if __name__ == "__main__":
    main()

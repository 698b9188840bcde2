# Expert-parallel dispatch buffer that re-allocates (and all-gathers its new config) when the EP-wide max token count outgrew it
# Source: https://github.com/deepseek-ai/DeepEP/issues/604
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

MESH = Mesh(np.array(jax.devices()), ("ep",))
EP = NamedSharding(MESH, P("ep"))
NUM_EXPERTS, HIDDEN = 4, 8
# SFT with variable sequence lengths: tokens per step on each rank
TOKENS_PER_STEP = {0: [96, 200, 150], 1: [128, 120, 260]}


@dataclass
class BufferConfig:
    max_num_of_tokens_per_rank: int
    hidden: int = HIDDEN

    def as_array(self):
        return np.array([self.max_num_of_tokens_per_rank, self.hidden], np.int64)


class HybridEPBuffer:
    def __init__(self, max_num_of_tokens_per_rank):
        counts = multihost_utils.process_allgather(np.int64(max_num_of_tokens_per_rank))
        self.config = BufferConfig(int(np.max(counts)))
        self.peer_configs = multihost_utils.process_allgather(self.config.as_array())
        self.reallocations = 0

    def update_buffer(self, num_of_tokens_per_rank):
        counts = multihost_utils.process_allgather(np.int64(num_of_tokens_per_rank))
        need_reallocate = int(np.max(counts)) > self.config.max_num_of_tokens_per_rank   # same on every rank
        if need_reallocate:
            self.config = BufferConfig(int(np.max(counts)))
            self.peer_configs = multihost_utils.process_allgather(self.config.as_array())
            self.reallocations += 1

    def dispatch(self, routing_map):
        pad_rows = self.config.max_num_of_tokens_per_rank - routing_map.shape[0]
        padded = np.pad(routing_map, ((0, pad_rows), (0, 0)))
        return jax.make_array_from_process_local_data(EP, padded)


@jax.jit
def expert_load(routing):
    return jnp.sum(routing, axis=0)             # per-expert token counts over every rank's rows


def route(num_tokens, step):
    rng = np.random.default_rng(17 * step + num_tokens)
    experts = rng.integers(0, NUM_EXPERTS, size=num_tokens)
    return np.eye(NUM_EXPERTS, dtype=np.int32)[experts]


def main():
    rank = jax.process_index()
    steps = TOKENS_PER_STEP[rank]
    buffer = HybridEPBuffer(steps[0])
    loads = []
    for step, num_tokens in enumerate(steps):
        buffer.update_buffer(num_tokens)
        routing = buffer.dispatch(route(num_tokens, step))
        loads.append(np.asarray(expert_load(routing)).tolist())
    print("RESULT expert_load", loads)
    print("RESULT peer_max_tokens", np.asarray(buffer.peer_configs)[:, 0].tolist())


if __name__ == "__main__":
    main()

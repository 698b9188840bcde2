# A data-parallel + expert-parallel decode worker in the style of vLLM V1's GPUModelRunner:
# each DP rank schedules its own requests, the token counts are coordinated across DP ranks,
# the forward pass is dispatched to a pre-captured graph size, and the MoE layer exchanges
# tokens between DP ranks. A DP rank with nothing scheduled runs a dummy batch so that the
# expert-parallel collectives stay matched.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HIDDEN = 8
NUM_EXPERTS = 4
CUDAGRAPH_CAPTURE_SIZES = [1, 2, 4, 8, 16]


@dataclass(frozen=True)
class BatchDescriptor:
    num_tokens: int


class CudagraphDispatcher:
    def __init__(self, capture_sizes):
        self.capture_sizes = sorted(capture_sizes)

    def dispatch(self, batch_descriptor):
        for size in self.capture_sizes:
            if size >= batch_descriptor.num_tokens:
                return size
        return batch_descriptor.num_tokens


def coordinate_batch_across_dp(num_tokens):
    counts = np.asarray(multihost_utils.process_allgather(np.int32(num_tokens)))
    return int(counts.max())


class MoEModel:
    def __init__(self, dp_rank, dp_size):
        rng = np.random.default_rng(7)
        self.embed = rng.normal(size=(64, HIDDEN)).astype(np.float32)
        self.router = rng.normal(size=(HIDDEN, NUM_EXPERTS)).astype(np.float32)
        self.experts = rng.normal(size=(NUM_EXPERTS, HIDDEN, HIDDEN)).astype(np.float32) / 3
        self.dp_rank, self.dp_size = dp_rank, dp_size
        self._experts_fn = jax.jit(self._apply_experts)

    @staticmethod
    def _apply_experts(router, experts, h):
        gate = jax.nn.softmax(h @ router, axis=-1)
        out = jnp.einsum("te,td,edk->tk", gate, h, experts)
        return jnp.tanh(out)

    def forward(self, token_ids, graph_size):
        h = np.zeros((graph_size, HIDDEN), np.float32)
        h[:len(token_ids)] = self.embed[token_ids]
        # expert-parallel dispatch: every DP rank sees every rank's padded tokens
        all_tokens = np.asarray(multihost_utils.process_allgather(h)).reshape(-1, HIDDEN)
        out = np.asarray(self._experts_fn(self.router, self.experts, all_tokens))
        mine = out.reshape(self.dp_size, graph_size, HIDDEN)[self.dp_rank]
        return mine[:len(token_ids)]


class GPUModelRunner:
    def __init__(self, model):
        self.model = model
        self.cudagraph_dispatcher = CudagraphDispatcher(CUDAGRAPH_CAPTURE_SIZES)

    def execute_model(self, token_ids):
        num_tokens = len(token_ids)
        num_tokens_after_padding = coordinate_batch_across_dp(num_tokens)
        graph_size = self.cudagraph_dispatcher.dispatch(BatchDescriptor(num_tokens=num_tokens_after_padding))
        hidden = self.model.forward(np.asarray(token_ids), graph_size)
        return (np.abs(hidden).sum(-1) * 10).astype(np.int64) % 64

    def _dummy_run(self, num_tokens=1):
        num_tokens_after_padding = coordinate_batch_across_dp(num_tokens)
        graph_size = self.cudagraph_dispatcher.dispatch(BatchDescriptor(num_tokens=num_tokens))
        self.model.forward(np.zeros(num_tokens, np.int32), graph_size)
        return num_tokens_after_padding


class EngineCore:
    def __init__(self, runner, requests):
        self.runner = runner
        self.requests = requests
        self.step_count = 0

    def has_unfinished_requests(self):
        local = any(len(r["output"]) < r["max_tokens"] for r in self.requests)
        flags = np.asarray(multihost_utils.process_allgather(np.int32(local)))
        return bool(flags.any())

    def step(self):
        running = [r for r in self.requests if len(r["output"]) < r["max_tokens"]]
        if not running:
            self.runner._dummy_run(1)
        else:
            last = [(r["prompt"] + r["output"])[-1] for r in running]
            new_tokens = self.runner.execute_model(last)
            for r, tok in zip(running, new_tokens):
                r["output"].append(int(tok))
        self.step_count += 1

    def run_busy_loop(self):
        while self.has_unfinished_requests():
            self.step()


def main():
    dp_rank, dp_size = jax.process_index(), jax.process_count()
    # the front-end load balancer sends each DP rank its own requests
    all_requests = [{"id": i, "prompt": [3 + i, 11 + 2 * i], "max_tokens": 3 + 4 * (i % 2) + i}
                    for i in range(6)]
    mine = [dict(r, output=[]) for r in all_requests if r["id"] % dp_size == dp_rank]
    engine = EngineCore(GPUModelRunner(MoEModel(dp_rank, dp_size)), mine)
    engine.run_busy_loop()
    outputs = {r["id"]: r["output"] for r in mine}
    gathered = multihost_utils.process_allgather(np.asarray([sum(v) for _, v in sorted(outputs.items())]))
    print("RESULT engine_steps", engine.step_count)
    print("RESULT output_checksums", np.asarray(gathered).tolist())


if __name__ == "__main__":
    main()

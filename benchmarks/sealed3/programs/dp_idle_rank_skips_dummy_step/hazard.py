# A data-parallel rank with zero scheduled tokens returns early unless the backend is external_launcher
# Source: https://github.com/vllm-project/vllm/pull/44601
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
VOCAB, DIM = 32, 8


@dataclass
class ParallelConfig:
    data_parallel_size: int
    distributed_executor_backend: str = "mp"


@dataclass
class Request:
    req_id: str
    last_token: int
    max_new_tokens: int
    output: list = field(default_factory=list)


class Scheduler:
    def __init__(self, requests):
        self.running = list(requests)
        self.finished = []

    def has_requests(self) -> bool:
        return bool(self.running)

    def schedule(self) -> list:
        return list(self.running)  # one decode token per running request

    def update(self, reqs, tokens) -> None:
        for req, tok in zip(reqs, tokens):
            req.output.append(int(tok))
            req.last_token = int(tok)
            if len(req.output) >= req.max_new_tokens:
                self.running.remove(req)
                self.finished.append(req)


@jax.jit
def _moe_forward(embed, experts, tokens):
    @partial(jax.shard_map, mesh=MESH, in_specs=(P(), P("dp"), P("dp")), out_specs=P("dp"))
    def ep_layer(embed, expert, tok):
        h = embed[tok]
        gathered = jax.lax.all_gather(h, "dp", tiled=True)  # allgather_reducescatter all2all backend
        out = jnp.tanh(gathered @ expert[0])
        return jax.lax.psum_scatter(out, "dp", tiled=True) @ embed.T
    return ep_layer(embed, experts, tokens)


class ModelRunner:
    def __init__(self, parallel_config: ParallelConfig):
        self.parallel_config = parallel_config
        rng = np.random.default_rng(0)
        self.embed = jax.device_put(rng.normal(size=(VOCAB, DIM)).astype(np.float32), NamedSharding(MESH, P()))
        self.experts = jax.device_put(rng.normal(size=(jax.device_count(), DIM, DIM)).astype(np.float32),
                                      NamedSharding(MESH, P("dp")))

    def coordinate_batch_across_dp(self, num_tokens: int, num_reqs: int) -> int:
        counts = np.asarray(multihost_utils.process_allgather(np.array([num_tokens, num_reqs], np.int32)))
        return max(4, int(2 ** np.ceil(np.log2(max(1, counts[:, 0].max())))))

    def _run(self, token_ids: list) -> np.ndarray:
        padded = self.coordinate_batch_across_dp(len(token_ids), len(token_ids))
        local = np.zeros((padded,), np.int32)
        local[:len(token_ids)] = token_ids
        logits = _moe_forward(self.embed, self.experts,
                              jax.make_array_from_process_local_data(NamedSharding(MESH, P("dp")), local))
        return np.asarray(logits.addressable_data(0))[:len(token_ids)]

    def _dummy_run(self, num_tokens: int) -> None:
        self._run([0] * num_tokens)

    def execute_model(self, scheduled: list):
        if not scheduled:
            if self.parallel_config.distributed_executor_backend == "external_launcher":
                self._dummy_run(1)
            return []
        return np.argmax(self._run([r.last_token for r in scheduled]), axis=-1)


def dp_has_unfinished(local: bool) -> bool:
    return bool(np.asarray(multihost_utils.process_allgather(np.int32(local))).max())


def serve(requests, parallel_config: ParallelConfig):
    scheduler, runner = Scheduler(requests), ModelRunner(parallel_config)
    steps = 0
    while dp_has_unfinished(scheduler.has_requests()):
        scheduled = scheduler.schedule()
        scheduler.update(scheduled, runner.execute_model(scheduled))
        steps += 1
    return scheduler.finished, steps


rank = jax.process_index()
my_requests = {0: [Request("a", 3, 4), Request("b", 7, 3)], 1: [Request("c", 11, 2)]}[rank]
finished, steps = serve(my_requests, ParallelConfig(data_parallel_size=jax.process_count()))
checksum = sum(sum(r.output) for r in finished)
print("RESULT engine_steps", steps)
print("RESULT dp_checksums", np.asarray(multihost_utils.process_allgather(np.int32(checksum))).tolist())

# Multi-host TP serving through per-host workers: with PP size 1 every worker's pipeline-parallel rank
# is set to 0 (the fix from the PR), so every host is both the first and the last PP rank
# Source: https://github.com/vllm-project/tpu-inference/pull/1528
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM = 16, 8


@dataclasses.dataclass
class ParallelConfig:
    pipeline_parallel_size: int = 1
    tensor_parallel_size: int = 2


class GroupCoordinator:
    def __init__(self, rank_in_group: int, world_size: int):
        self.rank_in_group, self.world_size = rank_in_group, world_size

    @property
    def is_first_rank(self):
        return self.rank_in_group == 0

    @property
    def is_last_rank(self):
        return self.rank_in_group == self.world_size - 1


class TPUModelRunner:
    def __init__(self):
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("model",))
        emb = np.cos(np.arange(VOCAB * DIM, dtype=np.float32)).reshape(VOCAB, DIM)
        self.emb = jax.device_put(emb, NamedSharding(self.mesh, P()))
        self.lm_head = jax.device_put(emb.T.copy(), NamedSharding(self.mesh, P(None, "model")))
        repl = NamedSharding(self.mesh, P())
        self._hidden = jax.jit(lambda e, t: jnp.tanh(jnp.mean(e[t], axis=0)), out_shardings=repl)
        self._logits = jax.jit(lambda h, w: h @ w, out_shardings=repl)
        self.repl = repl

    def hidden_states(self, tokens, intermediate=None):
        h = self._hidden(self.emb, jax.device_put(np.asarray(tokens, np.int32), self.repl))
        return h if intermediate is None else h + intermediate

    def compute_logits(self, hidden):
        return np.asarray(self._logits(hidden, self.lm_head))


class RayWorkerWrapper:
    def __init__(self, worker_rank: int, parallel_config: ParallelConfig):
        self.parallel_config = parallel_config
        self.rank = worker_rank if parallel_config.pipeline_parallel_size > 1 else 0
        self.pp_group = GroupCoordinator(self.rank, parallel_config.pipeline_parallel_size)
        self.runner = TPUModelRunner()

    def _recv_intermediate(self):
        return multihost_utils.broadcast_one_to_all(np.zeros((DIM,), np.float32), is_source=False)

    def _send_intermediate(self, hidden):
        multihost_utils.broadcast_one_to_all(np.asarray(hidden), is_source=True)

    def execute_model(self, tokens):
        intermediate = None if self.pp_group.is_first_rank else self._recv_intermediate()
        hidden = self.runner.hidden_states(tokens, intermediate)
        if not self.pp_group.is_last_rank:
            self._send_intermediate(hidden)
            return None
        logits = self.runner.compute_logits(hidden)
        return int(np.argmax(logits))


def generate(worker, prompt, max_new_tokens=5):
    tokens = list(prompt)
    for _ in range(max_new_tokens):
        nxt = worker.execute_model(tokens)
        nxt = int(multihost_utils.broadcast_one_to_all(np.int32(-1 if nxt is None else nxt)))
        tokens.append(nxt)
    return tokens[len(prompt):]


if __name__ == "__main__":
    worker = RayWorkerWrapper(jax.process_index(), ParallelConfig(tensor_parallel_size=jax.process_count()))
    print("RESULT", " ".join(map(str, generate(worker, [3, 1, 4, 1, 5]))))

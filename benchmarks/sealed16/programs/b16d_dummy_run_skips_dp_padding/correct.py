# DP serving engine: an idle DP rank runs a dummy batch that joins the same DP token-count sync and padding as the real path
# Source: https://github.com/vllm-project/vllm-ascend/pull/2454
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
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
class EngineConfig:
    hidden: int = 8
    num_engine_steps: int = 3
    # the API server routed its requests (prompt lengths) to DP rank 0 only: batch size < DP size
    requests_per_rank: dict = field(default_factory=lambda: {0: [5, 3], 1: []})


def expert_mlp(x, w):
    # MoE-style layer: tokens of every DP rank meet in one global op
    h = jnp.tanh(x @ w)
    return h, jnp.sum(h)


class DPModelRunner:
    def __init__(self, cfg, mesh):
        self.cfg = cfg
        self.sharding = NamedSharding(mesh, P("dp", None))
        self.w = jnp.asarray(np.linspace(-0.5, 1.0, cfg.hidden * cfg.hidden, dtype=np.float32)
                             .reshape(cfg.hidden, cfg.hidden))
        self.forward = jax.jit(expert_mlp)

    def get_dp_padding(self, num_tokens):
        across_dp = multihost_utils.process_allgather(np.array([num_tokens], np.int32)).reshape(-1)
        return int(across_dp.max()) - num_tokens

    def _model_forward(self, tokens):
        x = jax.make_array_from_process_local_data(self.sharding, tokens)
        _, total = self.forward(x, self.w)
        return float(total)

    def _process_reqs(self, prompt_lens):
        num_tokens = int(sum(prompt_lens))
        pad = self.get_dp_padding(num_tokens)
        ids = np.concatenate([np.arange(n, dtype=np.float32) for n in prompt_lens])
        tokens = np.zeros((num_tokens + pad, self.cfg.hidden), np.float32)
        tokens[:num_tokens] = (ids[:, None] + 1.0) / 10.0
        return self._model_forward(tokens)

    def _dummy_run(self, num_tokens=1):
        num_tokens += self.get_dp_padding(num_tokens)
        tokens = np.zeros((num_tokens, self.cfg.hidden), np.float32)
        return self._model_forward(tokens)


class EngineCore:
    def __init__(self, cfg, runner, rank):
        self.runner = runner
        self.waiting = list(cfg.requests_per_rank[rank])

    def step(self):
        if self.waiting:
            batch, self.waiting = self.waiting, []
            return self.runner._process_reqs(batch)
        return self.runner._dummy_run()


def main():
    cfg = EngineConfig()
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    engine = EngineCore(cfg, DPModelRunner(cfg, mesh), rank)
    totals = [engine.step() for _ in range(cfg.num_engine_steps)]
    multihost_utils.sync_global_devices("engine steps done")
    print("RESULT step_totals", [round(t, 4) for t in totals])


if __name__ == "__main__":
    main()

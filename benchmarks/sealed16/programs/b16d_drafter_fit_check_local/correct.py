# DP MoE serving with MTP speculative decoding (drafter per step): every DP rank runs the drafter and masks proposals that do not fit
# Source: https://github.com/vllm-project/vllm/issues/44185
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
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
class SpecConfig:
    max_model_len: int = 40
    num_speculative_tokens: int = 4
    max_num_seqs: int = 2
    hidden: int = 4
    num_steps: int = 3


# sequence lengths of the running requests on each DP rank; DP rank 1 serves a long-context request
RUNNING = {0: [10, 12], 1: [37]}


def moe_layer(x, w):
    # expert-parallel MoE layer: every DP rank's tokens meet in one global reduction
    h = jnp.tanh(x @ w)
    return h, jnp.sum(h, axis=0)


class DPSpecRunner:
    def __init__(self, cfg, mesh, rank):
        self.cfg = cfg
        self.sharding = NamedSharding(mesh, P("dp", None))
        self.seq_lens = list(RUNNING[rank])
        self.w_target = jnp.asarray(np.linspace(-0.4, 0.9, cfg.hidden * cfg.hidden, dtype=np.float32).reshape(cfg.hidden, cfg.hidden))
        self.w_draft = self.w_target * 0.5
        self.moe = jax.jit(moe_layer)

    def _batch(self, offset):
        x = np.zeros((self.cfg.max_num_seqs, self.cfg.hidden), np.float32)
        for i, n in enumerate(self.seq_lens):
            x[i] = (n + offset) / self.cfg.max_model_len
        return jax.make_array_from_process_local_data(self.sharding, x)

    def input_fits_in_drafter(self):
        return all(n + self.cfg.num_speculative_tokens <= self.cfg.max_model_len for n in self.seq_lens)

    def propose(self):
        drafts = []
        for k in range(self.cfg.num_speculative_tokens):
            _, pooled = self.moe(self._batch(k + 1), self.w_draft)
            drafts.append(float(pooled.sum()))
        return drafts

    def execute_model(self):
        _, pooled = self.moe(self._batch(0), self.w_target)
        target_score = float(pooled.sum())
        drafts = self.propose()  # every DP rank runs the drafter's MoE steps
        if not self.input_fits_in_drafter():
            drafts = []  # proposals that would overflow max_model_len are dropped locally
        self.seq_lens = [n + 1 for n in self.seq_lens]
        return round(target_score, 4), [round(d, 4) for d in drafts]


def main():
    cfg = SpecConfig()
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    runner = DPSpecRunner(cfg, mesh, jax.process_index())
    scores = [runner.execute_model()[0] for _ in range(cfg.num_steps)]
    multihost_utils.sync_global_devices("engine steps done")
    print("RESULT target_scores", scores)


if __name__ == "__main__":
    main()

# verl-style dynamic split of a step's effective sequences over data-parallel ranks: with fewer sequences than ranks one rank gets none and skips the forward
# Source: https://github.com/verl-project/verl/issues/6786
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import math
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


@dataclass
class ActorConfig:
    vocab: int = 12
    seq_len: int = 6
    micro_batch: int = 2
    # number of sequences with a non-empty response in each rollout step (the last step is tiny)
    effective_per_step: tuple = (6, 3, 1)


def rollout_batch(cfg, step):
    """The same rollout batch is seen by every rank (it comes from the single controller)."""
    rng = np.random.default_rng(10 + step)
    n = cfg.effective_per_step[step]
    tokens = rng.integers(1, cfg.vocab, size=(n, cfg.seq_len)).astype(np.int32)
    mask = np.ones((n, cfg.seq_len), np.float32)
    return tokens, mask


def split_for_dp(tokens, mask, dp_rank, dp_size):
    """Contiguous ceil-sized chunks, one per data-parallel rank."""
    chunk = math.ceil(len(tokens) / dp_size)
    lo, hi = dp_rank * chunk, min((dp_rank + 1) * chunk, len(tokens))
    return tokens[lo:hi], mask[lo:hi]


@jax.jit
def micro_loss(w, tokens, mask):
    logits = jax.nn.one_hot(tokens, w.shape[0]) @ w
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, jnp.roll(tokens, -1, axis=1)[..., None], axis=-1)[..., 0]
    return jnp.sum(nll * mask), jnp.sum(mask)         # reductions over the dp-sharded micro-batch


class DPActor:
    def __init__(self, cfg):
        self.cfg = cfg
        w = np.random.default_rng(0).normal(scale=0.3, size=(cfg.vocab, cfg.vocab)).astype(np.float32)
        self.w = jax.device_put(w, REPL)
        self.rank, self.size = jax.process_index(), jax.process_count()

    def _pad_micro(self, t, m):
        pad = self.cfg.micro_batch - len(t)
        return (np.pad(t, ((0, pad), (0, 0)), constant_values=0), np.pad(m, ((0, pad), (0, 0))))

    def compute_log_prob(self, tokens, mask):
        local_t, local_m = split_for_dp(tokens, mask, self.rank, self.size)
        total, count = 0.0, 0.0
        if len(local_t) == 0:                          # this rank received no sequences: nothing to run
            return total, count
        for s in range(0, len(local_t), self.cfg.micro_batch):
            t, m = self._pad_micro(local_t[s:s + self.cfg.micro_batch], local_m[s:s + self.cfg.micro_batch])
            gt = jax.make_array_from_process_local_data(ROWS, t)
            gm = jax.make_array_from_process_local_data(ROWS, m)
            l, c = micro_loss(self.w, gt, gm)
            total, count = total + float(l), count + float(c)
        return total, count


def main():
    cfg = ActorConfig()
    actor = DPActor(cfg)
    for step in range(len(cfg.effective_per_step)):
        tokens, mask = rollout_batch(cfg, step)
        total, count = actor.compute_log_prob(tokens, mask)
        print(f"RESULT step{step} nll_per_token", round(total / max(count, 1.0), 4))


if __name__ == "__main__":
    main()

# Tensor-parallel prefill with a per-rank prefix cache: each rank skips as many cached tokens as its own index matches
# Source: https://github.com/mstar-project/mstar/pull/281
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

MESH = Mesh(np.array(jax.devices()), ("tp",))
REPLICATED = NamedSharding(MESH, P())


@dataclass
class EngineConfig:
    vocab: int = 10
    hidden: int = 4
    ffn: int = 8
    page_size: int = 4


class TPModel:
    def __init__(self, cfg):
        rng = np.random.default_rng(0)
        self.embed = rng.normal(size=(cfg.vocab, cfg.hidden)).astype(np.float32)
        self.w_up = jax.device_put(rng.normal(size=(cfg.hidden, cfg.ffn)).astype(np.float32),
                                   NamedSharding(MESH, P(None, "tp")))  # column parallel
        self.w_down = jax.device_put(rng.normal(size=(cfg.ffn, cfg.hidden)).astype(np.float32),
                                     NamedSharding(MESH, P("tp", None)))  # row parallel: all-reduce
        self._fwd = jax.jit(lambda u, d, x: jax.nn.relu(x @ u) @ d, out_shardings=REPLICATED)

    def forward(self, tokens):
        x = jax.device_put(self.embed[np.asarray(tokens)], REPLICATED)
        return np.asarray(self._fwd(self.w_up, self.w_down, x))


class PrefixCache:
    """Page-aligned prefix index; each entry stores the running sum of the prefix's hidden states."""

    def __init__(self, page_size):
        self.page_size = page_size
        self.entries = {(): np.zeros(4, np.float32)}

    def commit(self, tokens, hidden, num_pages):
        for p in range(1, num_pages + 1):
            n = p * self.page_size
            self.entries[tuple(tokens[:n])] = hidden[:n].sum(axis=0)

    def match_prefix(self, tokens):
        n = (len(tokens) // self.page_size) * self.page_size
        while tuple(tokens[:n]) not in self.entries:
            n -= self.page_size
        return n


def prefill(model, cache, tokens):
    matched = cache.match_prefix(tokens)
    state = cache.entries[tuple(tokens[:matched])]
    extend = tokens[matched:]
    out = state + model.forward(extend).sum(axis=0)
    return int(np.argmax(out)), matched


def main():
    cfg = EngineConfig()
    model = TPModel(cfg)
    cache = PrefixCache(cfg.page_size)
    turn1 = [3, 1, 4, 1, 5, 9, 2, 6]
    hidden = model.forward(turn1)
    # each rank keys pages from its own postprocess copy; rank 1's copy of page 2 has not landed yet
    cache.commit(turn1, hidden, num_pages={0: 2, 1: 1}[jax.process_index()])
    turn2 = turn1 + [5, 3, 5]
    next_token, matched = prefill(model, cache, turn2)
    all_matched = np.asarray(multihost_utils.process_allgather(np.int32(matched))).reshape(-1)
    print("RESULT next_token", next_token)
    print("RESULT matched_prefix", all_matched.tolist())


if __name__ == "__main__":
    main()

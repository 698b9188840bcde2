# Expert-parallel MoE layer that splits its tokens into dispatch chunks counted from this process's own token count
# Source: https://github.com/PrimeIntellect-ai/prime-rl/pull/3411
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
class MoEConfig:
    hidden: int = 4
    num_experts: int = 4
    token_chunk_size: int = 2
    train_steps: int = 2


MESH = Mesh(np.array(jax.devices()), ("ep",))
EP = NamedSharding(MESH, P("ep"))


def dispatch_combine(experts, x, expert_idx, valid):
    # dispatch each token to its expert (experts live on different processes), combine weighted by validity
    out = jnp.einsum("th,thk->tk", x, experts[expert_idx])
    return out * valid[:, None]


class DeepEPRunner:
    def __init__(self, cfg):
        self.cfg = cfg
        self._dispatch = jax.jit(dispatch_combine)

    def _chunk(self, experts, x, idx, valid):
        c = self.cfg.token_chunk_size
        xs = np.zeros((c, self.cfg.hidden), np.float32)
        ids = np.zeros((c,), np.int32)
        mask = np.zeros((c,), np.float32)
        xs[:len(x)], ids[:len(x)], mask[:len(x)] = x, idx, valid
        args = [jax.make_array_from_process_local_data(EP, a) for a in (xs, ids, mask)]
        out = self._dispatch(experts, *args)
        return np.asarray(multihost_utils.global_array_to_host_local_array(out, MESH, P("ep")))[:len(x)]

    def run(self, experts, x, expert_idx):
        c = self.cfg.token_chunk_size
        chunk_ranges = [(start, min(start + c, x.shape[0])) for start in range(0, x.shape[0], c)]
        outs = [self._chunk(experts, x[s:e], expert_idx[s:e], np.ones(e - s, np.float32)) for s, e in chunk_ranges]
        return np.concatenate(outs) if outs else np.zeros((0, self.cfg.hidden), np.float32)


class MoELayer:
    def __init__(self, cfg):
        rng = np.random.default_rng(0)
        self.cfg = cfg
        self.router = rng.normal(size=(cfg.hidden, cfg.num_experts)).astype(np.float32)
        self.experts = jax.device_put(
            rng.normal(size=(cfg.num_experts, cfg.hidden, cfg.hidden)).astype(np.float32) * 0.5, EP)
        self.runner = DeepEPRunner(cfg)

    def forward(self, x):
        expert_idx = np.argmax(x @ self.router, axis=-1).astype(np.int32)
        return self.runner.run(self.experts, x, expert_idx)

    def update(self, lr):
        self.experts = jax.jit(lambda e: e * (1.0 - lr))(self.experts)


def local_micro_batch(step):
    # sequence packing leaves a different number of tokens on each data-parallel rank
    n = {0: 5, 1: 2}[jax.process_index()] + step
    rng = np.random.default_rng(100 * jax.process_index() + step)
    return rng.normal(size=(n, 4)).astype(np.float32)


def main():
    cfg = MoEConfig()
    layer = MoELayer(cfg)
    losses = []
    for step in range(cfg.train_steps):
        y = layer.forward(local_micro_batch(step))
        local = np.array([np.square(y).sum(), y.shape[0]], np.float32)
        tot = np.asarray(multihost_utils.process_allgather(local)).sum(axis=0)
        losses.append(round(float(tot[0] / tot[1]), 4))
        layer.update(0.1)
    print("RESULT losses", losses)


if __name__ == "__main__":
    main()

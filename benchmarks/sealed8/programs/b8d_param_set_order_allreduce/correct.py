# Trainer assigns allreduce slots by parameter name order, so a cell registering from a set is still consistent
# Source: https://github.com/apache/mxnet/issues/17056 (port of an MXNet Gluon/Horovod distributed-training bug to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

UNITS = 4


class Parameter:
    def __init__(self, name: str):
        self.name = name
        rng = np.random.default_rng(zlib.crc32(name.encode()))  # same initial value on every process
        self.data = jnp.asarray(rng.standard_normal((UNITS, UNITS)) * 0.3, dtype=jnp.float32)
        self.grad = jnp.zeros_like(self.data)


class MultiHeadAttentionCell:
    PROJECTIONS = {"query", "key", "value", "output", "mem_key", "mem_value"}

    def __init__(self, prefix: str = "attn_"):
        self._params = {}
        for proj in self.PROJECTIONS:  # registration order follows the set's iteration order
            self._params[prefix + proj + "_weight"] = Parameter(prefix + proj + "_weight")

    def collect_params(self) -> dict:
        return self._params

    def loss(self, weights: dict, x):
        return jnp.mean(sum(jnp.tanh(x @ w) for w in weights.values()) ** 2)


class DistributedTrainer:
    def __init__(self, params: dict, lr: float):
        # fix: order the parameters by name, so every process gives a parameter the same allreduce slot
        self._params = [params[name] for name in sorted(params)]
        self.lr = lr

    def _allreduce_grads(self) -> None:
        for i, param in enumerate(self._params):  # slot i is the i-th registered parameter
            every = multihost_utils.process_allgather(param.grad[None], tiled=True)
            param.grad = jnp.mean(every, axis=0)

    def step(self) -> None:
        self._allreduce_grads()
        for param in self._params:
            param.data = param.data - self.lr * param.grad


def main():
    cell = MultiHeadAttentionCell()
    trainer = DistributedTrainer(cell.collect_params(), lr=0.5)
    x = jnp.asarray(np.random.default_rng(100 + jax.process_index()).standard_normal((8, UNITS)), jnp.float32)
    for _ in range(3):
        params = cell.collect_params()
        grads = jax.grad(cell.loss)({k: p.data for k, p in params.items()}, x)
        for k, p in params.items():
            p.grad = grads[k]
        trainer.step()
    for name, p in sorted(cell.collect_params().items()):
        print(f"RESULT {name} sum={float(jnp.sum(p.data)):.5f}")


if __name__ == "__main__":
    main()

# Tensor-parallel model build draws from the shared data-parallel RNG; tp rank 0 draws extra (row-parallel bias)
# Source: https://github.com/InternLM/InternLM/pull/266
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import contextlib
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TP_RANK, TP_SIZE = jax.process_index(), jax.process_count()     # one data-parallel group of 2 tp ranks
HIDDEN, OUT, DROP = 8, 3, 0.25


class ParallelRNG:
    """Named random states: 'data' is shared by the tp ranks of a dp group, 'tensor' differs per tp rank."""

    def __init__(self, seed):
        self.states = {"data": np.random.default_rng(seed), "tensor": np.random.default_rng(seed + 1 + TP_RANK),
                       "dummy": np.random.default_rng(seed + 99)}
        self.mode = "data"

    @contextlib.contextmanager
    def use(self, mode):
        prev, self.mode = self.mode, mode
        try:
            yield
        finally:
            self.mode = prev

    def normal(self, size, scale=0.2):
        return (scale * self.states[self.mode].normal(size=size)).astype(np.float32)


class RowParallelLinear:
    def __init__(self, rng):
        with rng.use("tensor"):
            self.weight = rng.normal((HIDDEN // TP_SIZE, OUT))   # this rank's rows of the full weight
        # the bias is added once after the reduction, so only tp rank 0 owns (and initialises) it
        self.bias = rng.normal((OUT,)) if TP_RANK == 0 else np.zeros(OUT, np.float32)

    def __call__(self, hidden_part):
        partial = hidden_part @ self.weight
        total = np.asarray(multihost_utils.process_allgather(partial.astype(np.float32))).sum(axis=0)
        bias = np.asarray(multihost_utils.process_allgather(self.bias)).sum(axis=0)
        return total + bias


def build_model(rng):
    return RowParallelLinear(rng)


@jax.jit
def dropout_activations(x, keep):
    return jnp.tanh(x) * keep / (1.0 - DROP)


def main():
    rng = ParallelRNG(seed=1234)
    model = build_model(rng)
    data = np.random.default_rng(5).normal(size=(4, 6, HIDDEN)).astype(np.float32)   # same batch on both tp ranks
    checksums, losses = [], []
    for step in range(4):
        keep = (rng.states["data"].random(size=(6, HIDDEN)) > DROP).astype(np.float32)  # replicated dropout mask
        hidden = np.asarray(dropout_activations(data[step], keep))
        cols = slice(TP_RANK * HIDDEN // TP_SIZE, (TP_RANK + 1) * HIDDEN // TP_SIZE)
        out = model(hidden[:, cols])
        losses.append(round(float(np.mean(out ** 2)), 5))
        checksums.append(round(float(hidden.sum()), 4))      # replicated activations must match across tp ranks
    print("RESULT hidden_checksums", checksums)
    print("RESULT losses", losses)


if __name__ == "__main__":
    main()

# Tensor-parallel ranks must draw identical dropout masks, but only TP rank 0 builds the data loader, which draws from the global RNG
# Source: https://github.com/bigscience-workshop/Megatron-DeepSpeed/pull/276 (port of Megatron-DeepSpeed's data-loader seeding to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SEQ, HIDDEN, FFN = 4, 6, 8


def get_tensor_model_parallel_rank():
    return jax.process_index()


def _set_random_seed(seed):
    np.random.seed(seed)          # the same seed on every TP rank, so replicated dropout agrees


class DataLoader:
    """Yields token batches; each pass picks a base seed for its workers, like torch's DataLoader.__iter__."""

    def __init__(self, num_samples, seed):
        self.num_samples, self.seed = num_samples, seed

    def __iter__(self):
        base_seed = np.random.randint(0, 2**31 - 1)      # taken from the process-global RNG
        worker_rng = np.random.default_rng(base_seed)
        for _ in range(self.num_samples):
            yield worker_rng.normal(size=(SEQ, HIDDEN)).astype(np.float32)


def build_train_valid_test_data_iterators(seed):
    if get_tensor_model_parallel_rank() == 0:
        return iter(DataLoader(num_samples=3, seed=seed))
    return None


def broadcast_data(data_iterator):
    batch = next(data_iterator) if data_iterator is not None else np.zeros((SEQ, HIDDEN), np.float32)
    return np.asarray(multihost_utils.broadcast_one_to_all(batch))


class ParallelMLP:
    """Row-parallel second projection: partial sums are all-reduced, the result is replicated on every TP rank."""

    def __init__(self, tp_rank, tp_size, hidden_dropout=0.2):
        rng = np.random.default_rng(1234)
        w1, w2 = rng.normal(size=(HIDDEN, FFN)).astype(np.float32), rng.normal(size=(FFN, HIDDEN)).astype(np.float32)
        cols = slice(tp_rank * FFN // tp_size, (tp_rank + 1) * FFN // tp_size)
        self.w1, self.w2, self.hidden_dropout = w1[:, cols], w2[cols, :], hidden_dropout

    def forward(self, x):
        partial = np.tanh(x @ self.w1) @ self.w2
        out = multihost_utils.process_allgather(partial).sum(axis=0)   # all-reduce across the TP group
        mask = np.random.random(out.shape) >= self.hidden_dropout       # dropout on the replicated output
        return out * mask / (1 - self.hidden_dropout)


def main():
    seed = 42
    _set_random_seed(seed)
    data_iterator = build_train_valid_test_data_iterators(seed)
    mlp = ParallelMLP(get_tensor_model_parallel_rank(), jax.process_count())
    for step in range(3):
        x = broadcast_data(data_iterator)
        y = mlp.forward(x)
        print("RESULT step", step, "replicated_output_sum", round(float(y.sum()), 4))


if __name__ == "__main__":
    main()

# GPT-NeoX / Megatron-style pretraining data setup with model parallelism: only the first rank of
# each model-parallel group builds the (blended) datasets, then the dataset sizes and every batch
# are broadcast to the other model-parallel ranks. The linear head is column-parallel: each
# model-parallel rank owns half of the output columns.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MODEL_PARALLEL_SIZE = 2
HIDDEN, OUT = 8, 6
_HELPERS = {}


def get_model_parallel_rank():
    return jax.process_index() % MODEL_PARALLEL_SIZE


def compile_helper():
    # stands in for building megatron/data/helpers.cpp
    def build_blending_indices(weights, size):
        dataset_index = np.zeros(size, dtype=np.uint8)
        sample_index = np.zeros(size, dtype=np.int64)
        counts = np.zeros(len(weights), dtype=np.int64)
        for i in range(size):
            err = weights * (i + 1) - counts
            k = int(np.argmax(err))
            dataset_index[i], sample_index[i] = k, counts[k]
            counts[k] += 1
        return dataset_index, sample_index
    _HELPERS["build_blending_indices"] = build_blending_indices


def initialize_megatron():
    if jax.process_index() == 0:
        compile_helper()
    multihost_utils.sync_global_devices("compile_helpers")
    if not _HELPERS:
        compile_helper()
    return {"mp_rank": get_model_parallel_rank()}


class IndexedDataset:
    def __init__(self, seed, n):
        rng = np.random.default_rng(seed)
        self.x = rng.normal(size=(n, HIDDEN)).astype(np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]


class BlendableDataset:
    def __init__(self, datasets, weights):
        self.datasets = datasets
        self.size = sum(len(d) for d in datasets)
        weights = np.asarray(weights, dtype=np.float64)
        weights /= weights.sum()
        build = _HELPERS["build_blending_indices"]
        self.dataset_index, self.dataset_sample_index = build(weights, self.size)

    def __len__(self):
        return self.size

    def __getitem__(self, idx):
        return self.datasets[self.dataset_index[idx]][self.dataset_sample_index[idx]]


def build_train_data_iterator(batch_size):
    if get_model_parallel_rank() == 0:
        ds = BlendableDataset([IndexedDataset(1, 40), IndexedDataset(2, 24)], weights=[5.0, 3.0])
        flags = np.array([len(ds) // batch_size], dtype=np.int32)
    else:
        ds, flags = None, np.zeros(1, dtype=np.int32)
    flags = multihost_utils.broadcast_one_to_all(flags)
    return ds, int(flags[0])


def main():
    state = initialize_megatron()
    mp_rank = state["mp_rank"]
    batch_size = 8
    ds, num_batches = build_train_data_iterator(batch_size)
    w_true = np.random.default_rng(0).normal(size=(HIDDEN, OUT)).astype(np.float32)
    cols = slice(mp_rank * OUT // 2, (mp_rank + 1) * OUT // 2)
    w_shard = jnp.zeros((HIDDEN, OUT // 2))
    grad_fn = jax.jit(jax.value_and_grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))
    for step in range(num_batches):
        if mp_rank == 0:
            x = np.stack([ds[i] for i in range(step * batch_size, (step + 1) * batch_size)])
        else:
            x = np.zeros((batch_size, HIDDEN), dtype=np.float32)
        x = multihost_utils.broadcast_one_to_all(x)
        loss, g = grad_fn(w_shard, x, x @ w_true[:, cols])
        w_shard = w_shard - 0.1 * g
    losses = np.asarray(multihost_utils.process_allgather(np.float32(loss)))
    print("RESULT num_batches", num_batches)
    print("RESULT final_loss", round(float(losses.sum()), 4))


if __name__ == "__main__":
    main()

# c4_mlperf: the eval iterator gets its own loading-process list (all processes), so every process pads via the all-gather
# Source: https://github.com/AI-Hypercomputer/maxtext/pull/784
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import os
from typing import List, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class Config:
    per_device_batch_size: float = 0.5
    eval_per_device_batch_size: float = 1.0
    max_target_length: int = 4
    data_sharding: tuple = ("data",)

    @property
    def global_batch_size_to_load(self) -> int:  # at least one row per device is loaded
        return max(1, int(self.per_device_batch_size)) * jax.device_count()

    @property
    def global_batch_size_to_train_on(self) -> int:
        return int(self.per_device_batch_size * jax.device_count())

    @property
    def eval_global_batch_size_to_load(self) -> int:
        return int(self.eval_per_device_batch_size * jax.device_count())


def get_process_loading_real_data(config: Config, mesh, for_eval: bool = False) -> List[int]:
    """Get list of processes loading data from GCS when expansion_factor_real_data != -1"""
    sharding = NamedSharding(mesh, P(*config.data_sharding))
    batch_size_to_load = config.eval_global_batch_size_to_load if for_eval else config.global_batch_size_to_load
    devices_indices_map = sharding.devices_indices_map((batch_size_to_load, config.max_target_length))
    batch_cutoff = config.eval_global_batch_size_to_load if for_eval else config.global_batch_size_to_train_on
    process_loading_real_data = set()
    for p, indices in devices_indices_map.items():
        if indices[0].stop <= batch_cutoff:
            process_loading_real_data.add(p.process_index)
    return sorted(process_loading_real_data)


def c4_examples(split: str) -> List[np.ndarray]:
    n = 16 if split == "train" else 7
    return [np.arange(i, i + 4, dtype=np.int32) % 50 + 1 for i in range(n)]


def _pad_to_batch_size(ds: List[np.ndarray], batch_size: int) -> List[np.ndarray]:
    """Pad unevenly distributed eval data in each shard with new entries to multiples of batch size."""
    local_num = len(ds)
    local_num_batches = (local_num + batch_size - 1) // batch_size
    # Find the max number of batches required across all Jax processes.
    num_batches_all = multihost_utils.process_allgather(jnp.array([local_num_batches]), tiled=False)
    num_batches = int(np.max(num_batches_all))
    pad_num = num_batches * batch_size - local_num
    return ds + [np.zeros_like(ds[0])] * pad_num


def get_datasets(dataloading_host_index: int, dataloading_host_count: int):
    train_ds = c4_examples("train")[dataloading_host_index::dataloading_host_count]
    eval_ds = c4_examples("validation")[dataloading_host_index::dataloading_host_count]
    return train_ds, eval_ds


def batched(ds: List[np.ndarray], batch_size: int):
    for i in range(0, len(ds), batch_size):
        yield np.stack(ds[i:i + batch_size])


def make_c4_mlperf_train_iterator(config: Config, mesh, process_indices: List[int]):
    train_ds, _ = get_datasets(process_indices.index(jax.process_index()), len(process_indices))
    train_batch = config.global_batch_size_to_load // jax.process_count()
    return batched(train_ds, train_batch)


def make_c4_mlperf_eval_iterator(config: Config, mesh, process_indices: List[int]):
    _, eval_ds = get_datasets(process_indices.index(jax.process_index()), len(process_indices))
    eval_batch = config.eval_global_batch_size_to_load // jax.process_count()
    # pad zeros up to the same batch_size among all processes
    eval_ds = _pad_to_batch_size(eval_ds, eval_batch)
    return batched(eval_ds, eval_batch)


class BadSyntheticDataIterator:
    """Placeholder rows for processes that hold no real data (masked out by the cutoff)."""

    def __init__(self, config: Config):
        self.rows = config.global_batch_size_to_load // jax.process_count()
        self.length = config.max_target_length

    def __iter__(self):
        while True:
            yield np.zeros((self.rows, self.length), np.int32)


def make_mixed_train_iterator(config: Config, mesh):
    process_indices_train = get_process_loading_real_data(config, mesh)
    process_indices_eval = get_process_loading_real_data(config, mesh, for_eval=True)
    assert sorted(process_indices_eval) == list(range(jax.process_count())), "eval needs every process to load data"
    eval_iter = make_c4_mlperf_eval_iterator(config, mesh, process_indices=process_indices_eval)
    if jax.process_index() in process_indices_train:
        return make_c4_mlperf_train_iterator(config, mesh, process_indices=process_indices_train), eval_iter
    return iter(BadSyntheticDataIterator(config)), eval_iter


config = Config()
mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
rows = NamedSharding(mesh, P("data"))
train_iter, eval_iter = make_mixed_train_iterator(config, mesh)
init = np.ones((config.max_target_length,), np.float32)
params = jax.make_array_from_callback(init.shape, NamedSharding(mesh, P()), lambda idx: init[idx])


@jax.jit
def train_step(params, tokens):
    real = jnp.arange(tokens.shape[0])[:, None] < config.global_batch_size_to_train_on
    x = jnp.where(real, tokens, 0).astype(jnp.float32) / 50.0
    return params - 0.1 * jnp.mean(x, axis=0) * params


@jax.jit
def eval_step(params, tokens):
    weights = (tokens > 0).astype(jnp.float32)
    return jnp.sum(weights * tokens / 50.0 * params), jnp.sum(weights)


for step in range(3):
    batch = jax.make_array_from_process_local_data(rows, next(train_iter))
    params = train_step(params, batch)

eval_loss, eval_weight, eval_batches = 0.0, 0.0, 0
for eval_batch in eval_iter:
    loss, weight = eval_step(params, jax.make_array_from_process_local_data(rows, eval_batch))
    eval_loss, eval_weight, eval_batches = eval_loss + float(loss), eval_weight + float(weight), eval_batches + 1
print("RESULT params", [round(float(v), 5) for v in np.asarray(params.addressable_data(0))])
print("RESULT eval", eval_batches, round(eval_loss / eval_weight, 5))

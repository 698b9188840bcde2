# Training-eval datasets are sharded by file per host; a host whose files are all filtered out gets an
# empty shard and raises, while the other hosts go on into the evaluation steps.
# Source: https://github.com/google-research/t5x/commit/e19892857f1b4b6d07b2017bf3888aeaa898f3e8
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())

# Two TFRecord-like files of the validation split; the second holds only over-long examples.
VALIDATION_FILES = [
    [np.full((4,), 0.1 * i, np.float32) for i in range(1, 9)],
    [np.full((4,), 0.1 * i, np.float32) for i in range(9, 13)],
]


@dataclasses.dataclass
class DatasetConfig:
    mixture_or_task_name: str
    split: str = "validation"
    batch_size: int = 4
    max_value: float = 0.85  # the length filter of the task's preprocessors


class Dataset:
    def __init__(self, make_iter):
        self._make_iter = make_iter

    def __iter__(self):
        return self._make_iter()

    def repeat(self):
        def gen():
            while True:
                empty = True
                for x in self:
                    empty = False
                    yield x
                if empty:
                    return
        return Dataset(gen)

    def shard(self, num_shards, index):
        return Dataset(lambda: itertools.islice(iter(self), index, None, num_shards))

    def take(self, n):
        return Dataset(lambda: itertools.islice(iter(self), n))


def get_dataset_fn(cfg, shard_id, num_shards, num_epochs, batch_size):
    files = VALIDATION_FILES[shard_id::num_shards]

    def gen():
        for _ in range(num_epochs):
            examples = [ex for f in files for ex in f if float(ex[0]) <= cfg.max_value]
            for start in range(0, len(examples) - batch_size + 1, batch_size):
                yield np.stack(examples[start:start + batch_size])
    return Dataset(gen)


def get_training_eval_datasets(cfg, shard_id, num_shards, eval_steps):
    per_host = cfg.batch_size // num_shards
    datasets = {}
    datasets[cfg.mixture_or_task_name] = get_dataset_fn(
        cfg, shard_id, num_shards, num_epochs=eval_steps, batch_size=per_host).repeat().take(eval_steps)
    for task_name, ds in datasets.items():
        try:
            next(iter(ds))
        except StopIteration:
            raise ValueError(f"Shard {shard_id}/{num_shards} of task '{task_name}:{cfg.split}' is empty. "
                             "Try resharding your dataset for more even splits or reducing data parallelism.")
    return datasets


@jax.jit
def eval_step(params, batch):
    return jnp.mean((batch @ params - 1.0) ** 2)


def run_training_eval(params, datasets):
    results = {}
    for task_name, ds in datasets.items():
        losses = [float(eval_step(params, jax.make_array_from_process_local_data(DATA, b))) for b in ds]
        results[task_name] = (len(losses), round(float(np.mean(losses)), 5))
    return results


params = jax.device_put(jnp.full((4,), 0.5), REPL)
cfg = DatasetConfig(mixture_or_task_name="wmt_ende_v003")
eval_datasets = get_training_eval_datasets(cfg, jax.process_index(), jax.process_count(), eval_steps=3)
print("RESULT", run_training_eval(params, eval_datasets))

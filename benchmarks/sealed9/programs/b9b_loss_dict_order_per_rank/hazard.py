# Per-task losses are reduced as a stacked vector in the loss dict's insertion order, which follows the local batch
# Source: https://github.com/facebookresearch/maskrcnn-benchmark/issues/309
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TASKS = {"box_reg": 0, "classifier": 1, "mask": 2}
DIM = 4


def reduce_loss_dict(loss_dict):
    """Average the loss dict over processes so that every process logs the same values."""
    world_size = jax.process_count()
    loss_names, all_losses = [], []
    for k, v in loss_dict.items():
        loss_names.append(k)
        all_losses.append(v)
    stacked = np.asarray(all_losses, np.float32)
    summed = np.asarray(multihost_utils.process_allgather(stacked)).sum(axis=0)
    return {k: float(v) / world_size for k, v in zip(loss_names, summed)}


def local_batch(step):
    """A multi-task batch: (task name, features, target) records in the order the sampler yields them."""
    rng = np.random.default_rng(100 * jax.process_index() + step)
    order = list(TASKS) if jax.process_index() == 0 else list(reversed(TASKS))
    records = []
    for task in order:
        for _ in range(2):
            x = rng.normal(size=DIM).astype(np.float32)
            records.append((task, x, float(x.sum() * (1 + TASKS[task]))))
    return records


@jax.jit
def per_record_loss(w, x, y, task_ids):
    pred = jnp.sum(x * w[task_ids], axis=1)
    return (pred - y) ** 2


def compute_losses(w, records):
    x = np.stack([r[1] for r in records])
    y = np.asarray([r[2] for r in records], np.float32)
    ids = np.asarray([TASKS[r[0]] for r in records], np.int32)
    per_record = np.asarray(per_record_loss(w, x, y, ids))
    loss_dict = {}
    for (task, _, _), value in zip(records, per_record):
        loss_dict.setdefault(f"loss_{task}", []).append(value)
    return {k: float(np.mean(v)) for k, v in loss_dict.items()}


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    w = jax.device_put(jnp.ones((len(TASKS), DIM)) * 0.5, NamedSharding(mesh, P()))
    history = []
    for step in range(3):
        reduced = reduce_loss_dict(compute_losses(w, local_batch(step)))
        history.append(reduced)
        w = w * 1.1
    for name in sorted(history[-1]):
        print("RESULT", name, round(history[-1][name], 4))


main()

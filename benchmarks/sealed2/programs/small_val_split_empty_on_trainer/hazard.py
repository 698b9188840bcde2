# Multi-task evaluation: a task's validation set smaller than the number of trainers leaves one trainer empty
# Source: https://github.com/awslabs/graphstorm/issues/959
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("trainers",))
ROWS = NamedSharding(MESH, P("trainers"))
REPL = NamedSharding(MESH, P())


@dataclasses.dataclass
class TaskInfo:
    task_id: str
    num_val: int


TASKS = [TaskInfo("nc_movie", 9), TaskInfo("er_rating", 1), TaskInfo("lp_user_movie", 6)]


def node_split(num: int, rank: int, world: int) -> np.ndarray:
    """Even split of the validation ids across trainers (DGL-style node_split)."""
    return np.array_split(np.arange(num), world)[rank]


def get_val_set(task: TaskInfo) -> np.ndarray | None:
    idx = node_split(task.num_val, jax.process_index(), jax.process_count())
    return idx if len(idx) > 0 else None


@jax.jit
def task_score(w, feats):
    return jnp.mean(jnp.tanh(feats @ w))


def evaluate(w, feats_table: np.ndarray) -> dict[str, float]:
    results = {}
    for task in TASKS:
        val_idx = get_val_set(task)
        if val_idx is None:
            continue  # no validation data on this trainer for this task
        # Every trainer contributes the same number of rows: pad its part to the largest part's size.
        rows = feats_table[np.resize(val_idx, -(-task.num_val // jax.process_count()))]
        results[task.task_id] = round(float(task_score(w, jax.make_array_from_process_local_data(ROWS, rows))), 5)
    return results


feats_table = np.random.default_rng(3).normal(size=(16, 4)).astype(np.float32)
w = jax.device_put(jnp.full((4,), 0.25), REPL)
print("RESULT", sorted(evaluate(w, feats_table).items()))

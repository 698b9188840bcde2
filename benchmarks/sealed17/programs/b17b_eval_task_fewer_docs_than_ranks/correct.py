# lm-eval-style distributed evaluator: the empty-task check looks at the task's docs, so a process with no local requests still joins
# Source: https://github.com/EleutherAI/lm-evaluation-harness/issues/3511
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DIM = 6


class Task:
    def __init__(self, name, num_docs, seed):
        rng = np.random.default_rng(seed)
        self.name = name
        self.docs = [(rng.normal(size=(2, DIM)).astype(np.float32), int(rng.integers(0, 2))) for _ in range(num_docs)]

    def build_requests(self, rank, world):
        if len(self.docs) == 0:
            raise ValueError(f"task.build_requests() did not find any docs! ({self.name})")
        self._instances = [(ctx, gold) for ctx, gold in self.docs[rank::world]]
        return self._instances


@jax.jit
def score_choices(w, choices):
    return jnp.einsum("bcd,d->bc", choices, w)


class Evaluator:
    def __init__(self, mesh, w):
        self.sharding = NamedSharding(mesh, P("data"))
        self.w = w

    def loglikelihood(self, instances):
        count = np.array([len(instances)], np.int32)
        max_count = int(np.asarray(multihost_utils.process_allgather(count)).max())
        choices = np.zeros((max_count, 2, DIM), np.float32)
        gold = np.full((max_count,), -1, np.int32)
        for i, (ctx, g) in enumerate(instances):
            choices[i], gold[i] = ctx, g
        scores = score_choices(self.w, jax.make_array_from_process_local_data(self.sharding, choices))
        all_scores = np.asarray(multihost_utils.process_allgather(scores, tiled=True))
        all_gold = np.asarray(multihost_utils.process_allgather(gold, tiled=False)).reshape(-1)
        valid = all_gold >= 0
        return float(np.mean(all_scores[valid].argmax(axis=1) == all_gold[valid]))

    def evaluate(self, tasks):
        results = {}
        for task in tasks:
            instances = task.build_requests(jax.process_index(), jax.process_count())
            results[task.name] = self.loglikelihood(instances)
        return results


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    w = jax.device_put(np.linspace(-1.0, 1.0, DIM).astype(np.float32), NamedSharding(mesh, P()))
    tasks = [Task("mmlu_anatomy", 9, 1), Task("mmlu_virology_tiny", 1, 2), Task("mmlu_astronomy", 6, 3)]
    results = Evaluator(mesh, w).evaluate(tasks)
    for name in sorted(results):
        print("RESULT acc", name, round(results[name], 4))


if __name__ == "__main__":
    main()

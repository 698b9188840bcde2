# Eval harness catches a task failure on one process and moves on, leaving the other processes in the result gather
# Source: https://github.com/EvolvingLMMs-Lab/lmms-eval/pull/1304
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TASKS = {"arc_easy": 12, "hellaswag": 10, "piqa": 8}
MALFORMED = {("hellaswag", 7)}         # one doc in the hellaswag split has no gold answer


def load_docs(task, rank, world):
    docs = []
    for i in range(TASKS[task])[rank::world]:
        rng = np.random.default_rng(sum(map(ord, task)) + i)
        gold = None if (task, i) in MALFORMED else int(rng.integers(4))
        docs.append({"id": i, "choices": rng.normal(size=(4, 3)).astype(np.float32), "gold": gold})
    return docs


@jax.jit
def score_choices(w, choices):
    return choices @ w


def evaluate(task, docs, w):
    correct = []
    for doc in docs:
        if doc["gold"] is None:
            raise ValueError(f"{task} doc {doc['id']} has no gold answer")
        pred = int(jnp.argmax(score_choices(w, doc["choices"])))
        correct.append(float(pred == doc["gold"]))
    return np.asarray(correct, np.float32)


def gather_results(local, failed=0):
    """Exchange (count, failed) per process, then the padded per-doc scores; None if any process failed."""
    meta = multihost_utils.process_allgather(np.array([local.shape[0], failed], np.int32))
    width = int(meta[:, 0].max())
    padded = np.concatenate([local, np.zeros((width - local.shape[0],), np.float32)])
    scores = multihost_utils.process_allgather(padded)
    if meta[:, 1].any():
        return None
    return float(np.concatenate([scores[i, :int(n)] for i, n in enumerate(meta[:, 0])]).mean())


def cli_evaluate():
    rank, world = jax.process_index(), jax.process_count()
    w = jnp.array([0.3, -0.2, 0.5], jnp.float32)
    results = {}
    for task in TASKS:
        docs = load_docs(task, rank, world)
        try:
            local = evaluate(task, docs, w)
        except Exception as err:
            print(f"[rank {rank}] error evaluating {task}: {err}", flush=True)
            results[task] = None
            continue
        results[task] = gather_results(local)
    multihost_utils.sync_global_devices("evaluation finished")
    return results


if __name__ == "__main__":
    for name, acc in cli_evaluate().items():
        print("RESULT", name, "failed" if acc is None else round(acc, 4))

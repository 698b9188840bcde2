# Multi-process evaluation gathers per-sample metrics key by key, in one sorted key order agreed by all ranks
# Source: https://github.com/EvolvingLMMs-Lab/lmms-eval/pull/1089
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import collections
import os
import pickle

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RANK, WORLD_SIZE = jax.process_index(), jax.process_count()

# (doc_id, task type, prediction, target); grounding docs yield IoU then accuracy, QA docs the reverse.
DOCS = [(i, "grounding" if i % 3 == 0 else "qa", (i * 7) % 5, (i * 3) % 5) for i in range(8)]


def all_gather_object(obj) -> list:
    """Every rank receives every rank's picklable object (pads the pickles to a common length)."""
    data = np.frombuffer(pickle.dumps(obj), np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.int32(len(data)))).reshape(-1)
    buf = np.zeros(int(sizes.max()), np.uint8)
    buf[:len(data)] = data
    gathered = np.asarray(multihost_utils.process_allgather(buf))
    return [pickle.loads(gathered[r, :sizes[r]].tobytes()) for r in range(WORLD_SIZE)]  # nosec


def process_results(doc) -> dict:
    _, kind, pred, target = doc
    iou = 1.0 / (1.0 + abs(pred - target))
    acc = float(pred == target)
    if kind == "grounding":
        return {"iou": iou, "accuracy": acc}
    return {"accuracy": acc, "iou": iou}


class TaskOutput:
    def __init__(self, task_name: str):
        self.task_name = task_name
        self.sample_metrics = collections.defaultdict(list)

    def log_sample(self, doc):
        for metric, value in process_results(doc).items():
            self.sample_metrics[(metric, "none")].append(value)


class Evaluator:
    def __init__(self, task_name: str):
        self.task_output = TaskOutput(task_name)

    def run_docs(self):
        for doc in DOCS[RANK::WORLD_SIZE]:  # interleaved split of the docs over ranks
            self.task_output.log_sample(doc)

    def gather_metrics(self) -> dict:
        # Agree on one key order first: gather every rank's keys and iterate their sorted union.
        all_keys = all_gather_object(list(self.task_output.sample_metrics.keys()))
        canonical_keys = sorted({key for rank_keys in all_keys for key in rank_keys})
        merged = {}
        for metrics in canonical_keys:
            metric_list = all_gather_object(self.task_output.sample_metrics[metrics])
            merged[metrics] = [v for rank_values in metric_list for v in rank_values]
        return merged

    def aggregate(self) -> dict:
        merged = self.gather_metrics()
        return {f"{name},{flt}": round(float(np.mean(vals)), 4) for (name, flt), vals in sorted(merged.items())}


def main():
    evaluator = Evaluator("refcoco_bbox")
    evaluator.run_docs()
    for key, value in evaluator.aggregate().items():
        print("RESULT", f"{key}={value}")


if __name__ == "__main__":
    main()

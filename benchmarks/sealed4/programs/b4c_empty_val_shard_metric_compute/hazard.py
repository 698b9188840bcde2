# Box metrics are computed only if this rank's validation shard held a non-empty image; compute() gathers across ranks
# Source: https://github.com/weecology/DeepForest/issues/1407
# Written for the mcjax sealed4 evaluation (not copied): a port of a DeepForest (PyTorch Lightning DDP + torchmetrics)
# bug to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def gather_all_tensors(local: np.ndarray) -> np.ndarray:
    """torchmetrics-style gather: agree on sizes, pad to the largest, all-gather, trim."""
    sizes = multihost_utils.process_allgather(np.array([local.shape[0]], np.int32)).reshape(-1)
    padded = np.zeros((int(sizes.max()),) + local.shape[1:], np.float32)
    padded[:local.shape[0]] = local
    gathered = multihost_utils.process_allgather(padded)
    return np.concatenate([gathered[i, :n] for i, n in enumerate(sizes)])


class Metric:
    def __init__(self):
        self.groundtruth_labels = []
        self.scores = []

    def update(self, scores, labels):
        self.scores.extend(scores)
        self.groundtruth_labels.extend(labels)

    def compute(self):
        return gather_all_tensors(np.asarray(self.scores, np.float32).reshape(-1))


class IoUMetric(Metric):
    def compute(self):
        return {"iou": float(np.mean(super().compute()))}


class MeanAveragePrecision(Metric):
    def compute(self):
        s = np.sort(super().compute())[::-1]
        return {"map": float(np.mean(np.cumsum(s) / np.arange(1, s.size + 1)))}


class PrecisionRecall(Metric):
    def compute(self):
        s = super().compute()
        return {"box_precision": float(np.mean(s > 0.5)) if s.size else 0.0}


class DeepForestModule:
    def __init__(self):
        self.iou_metric = IoUMetric()
        self.mAP_metric = MeanAveragePrecision()
        self.precision_recall_metric = PrecisionRecall()

    def validation_step(self, image):
        boxes, scores = image["boxes"], image["scores"]
        self.precision_recall_metric.update(scores, boxes)
        if len(boxes) > 0:  # only non-empty-target images update the box metrics
            self.iou_metric.update(scores, boxes)
            self.mAP_metric.update(scores, boxes)

    def _compute_epoch_metrics(self):
        metrics = {}
        if len(self.iou_metric.groundtruth_labels) > 0:
            metrics.update(self.iou_metric.compute())
            metrics.update(self.mAP_metric.compute())
        metrics.update(self.precision_recall_metric.compute())
        return metrics


def validation_images():
    rng = np.random.default_rng(0)
    images = []
    for i in range(8):
        n = 0 if i >= 4 else int(rng.integers(1, 4))  # the tail of the val set is empty frames
        images.append({"boxes": list(range(n)), "scores": rng.uniform(0.2, 1.0, size=n).tolist() or [0.1]})
    return images


def distributed_shard(items):
    # shuffle=False: contiguous blocks per rank
    per_rank = len(items) // jax.process_count()
    return items[jax.process_index() * per_rank:(jax.process_index() + 1) * per_rank]


module = DeepForestModule()
for image in distributed_shard(validation_images()):
    module.validation_step(image)
metrics = module._compute_epoch_metrics()
print("RESULT metrics", {k: round(v, 4) for k, v in sorted(metrics.items())})

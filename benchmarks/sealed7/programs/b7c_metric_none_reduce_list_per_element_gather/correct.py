# Metric sync for dist_reduce_fx=None list states: one gather per list element, and the lists differ in length per rank
# Source: https://github.com/Lightning-AI/torchmetrics/issues/3336 (port of torchmetrics Metric._sync_dist to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def gather_all_tensors(result):
    """All-gather a tensor whose first dimension may differ per rank: gather the sizes, pad, gather, trim."""
    local_size = np.array([result.shape[0]], np.int32)
    sizes = multihost_utils.process_allgather(local_size).reshape(-1)
    padded = np.zeros((int(sizes.max()),) + result.shape[1:], result.dtype)
    padded[:result.shape[0]] = result
    gathered = multihost_utils.process_allgather(padded)
    return [gathered[i, :int(n)] for i, n in enumerate(sizes)]


class Metric:
    def __init__(self):
        self._defaults, self._reductions = {}, {}

    def add_state(self, name, default, dist_reduce_fx=None):
        self._defaults[name], self._reductions[name] = default, dist_reduce_fx
        setattr(self, name, list(default))

    def _sync_dist(self):
        for attr, reduction_fn in self._reductions.items():
            state = getattr(self, attr)
            if reduction_fn is None and isinstance(state, list):
                # pad the shorter lists with empty placeholders so every rank runs the same number of gathers
                longest = int(multihost_utils.process_allgather(np.array([len(state)], np.int32)).max())
                state = state + [np.zeros((0,), np.float32)] * (longest - len(state))
                gathered = [gather_all_tensors(t) for t in state]
                setattr(self, attr, [t for per_rank in gathered for t in per_rank if t.size > 0])

    def compute(self):
        self._sync_dist()
        return self._compute()


class MeanAveragePrecision(Metric):
    def __init__(self, iou_threshold=0.5):
        super().__init__()
        self.iou_threshold = iou_threshold
        self.add_state("detection_scores", default=[], dist_reduce_fx=None)
        self.add_state("detection_matched", default=[], dist_reduce_fx=None)

    def update(self, scores, matched):
        self.detection_scores.append(scores.astype(np.float32))
        self.detection_matched.append(matched.astype(np.float32))

    def _compute(self):
        scores = np.concatenate(self.detection_scores)
        matched = np.concatenate(self.detection_matched)
        order = np.argsort(-scores, kind="stable")
        tp = np.cumsum(matched[order])
        precision = tp / np.arange(1, len(order) + 1)
        return float(np.sum(precision * matched[order]) / max(matched.sum(), 1.0))


def validation_shard(rank, num_images=9, world=2):
    # the validation sampler does not pad: the last image goes to rank 0 only
    for image_id in range(rank, num_images, world):
        rng = np.random.default_rng(image_id)
        n_boxes = int(rng.integers(1, 5))
        yield rng.random(n_boxes), rng.random(n_boxes) > 0.4


def main():
    metric = MeanAveragePrecision()
    for scores, matched in validation_shard(jax.process_index()):
        metric.update(scores, matched)
    print("RESULT map", round(metric.compute(), 5))
    print("RESULT detections", len(metric.detection_scores))


if __name__ == "__main__":
    main()

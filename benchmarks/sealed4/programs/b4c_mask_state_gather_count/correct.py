# Metric sync gathers a list state element by element when it cannot concatenate it: the collective count is per-rank
# Source: https://github.com/roboflow/rf-detr/pull/1085
# Written for the mcjax sealed4 evaluation (not copied): a port of an RF-DETR (PyTorch Lightning DDP + torchmetrics)
# validation deadlock to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import os
import pickle

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def gather_all_tensors(t: np.ndarray) -> list:
    """Gather one array of any shape from every rank: agree on shapes, pad, all-gather, trim."""
    shapes = multihost_utils.process_allgather(np.array(t.shape, np.int32))
    padded = np.zeros(tuple(shapes.max(axis=0)), t.dtype)
    padded[tuple(slice(0, n) for n in t.shape)] = t
    gathered = multihost_utils.process_allgather(padded)
    return [gathered[r][tuple(slice(0, n) for n in shapes[r])] for r in range(len(shapes))]


def all_gather_object(obj) -> list:
    data = np.frombuffer(pickle.dumps(obj), np.uint8)
    return [pickle.loads(b.tobytes()) for b in gather_all_tensors(data)]


class Metric:
    def __init__(self, sync_on_compute: bool = True):
        self.sync_on_compute = sync_on_compute
        self._list_states = []

    def add_state(self, name: str):
        self._list_states.append(name)
        setattr(self, name, [])

    def _sync_dist(self):
        for attr in self._list_states:
            value = getattr(self, attr)
            if value and all(v.shape[1:] == value[0].shape[1:] for v in value):
                value = [np.concatenate(value)]  # one tensor: one gather
            setattr(self, attr, [g for v in value for g in gather_all_tensors(v)])

    def compute(self):
        if self.sync_on_compute and jax.process_count() > 1:
            self._sync_dist()
        return self._compute()


class MeanAveragePrecision(Metric):
    _MAP_STATE_ATTRS = ("detection_scores", "detection_mask", "groundtruth_mask")

    def __init__(self, **kw):
        super().__init__(**kw)
        for name in self._MAP_STATE_ATTRS:
            self.add_state(name)

    def update(self, pred: dict, target: dict):
        self.detection_scores.append(pred["scores"])
        self.detection_mask.extend(pred["masks"])
        self.groundtruth_mask.extend(target["masks"])

    def merge_distributed_state(self):
        for attr in self._MAP_STATE_ATTRS:  # exactly one object gather per declared list state
            gathered = all_gather_object(getattr(self, attr))
            setattr(self, attr, [item for rank_items in gathered for item in rank_items])

    def _compute(self):
        ious = [np.sum(p & g) / max(1, np.sum(p | g)) for p, g in zip(self.detection_mask, self.groundtruth_mask)]
        scores = np.concatenate(self.detection_scores) if self.detection_scores else np.zeros(0)
        return {"segm_map": float(np.mean(ious)) if ious else 0.0, "num_dets": int(scores.size)}


class COCOEvalCallback:
    def __init__(self):
        self.metric = MeanAveragePrecision(sync_on_compute=False)

    def on_validation_batch_end(self, outputs, batch):
        self.metric.update(outputs, batch)

    def on_validation_epoch_end(self):
        self.metric.merge_distributed_state()  # every rank, same collectives in the same order
        return self.metric.compute()


def validation_shard():
    """Each rank's images; masks have the image's own size, and some images have no annotations."""
    rng = np.random.default_rng(7 + jax.process_index())
    for i in range(2):
        h, w = int(rng.integers(4, 9)), int(rng.integers(4, 9))
        n = int(rng.integers(0, 3))
        masks = [rng.random((h, w)) > 0.5 for _ in range(n)]
        yield {"scores": rng.random(n), "masks": masks}, {"masks": [m | (rng.random((h, w)) > 0.8) for m in masks]}


callback = COCOEvalCallback()
for outputs, batch in validation_shard():
    callback.on_validation_batch_end(outputs, batch)
metrics = callback.on_validation_epoch_end()
print("RESULT metrics", {k: round(v, 4) for k, v in sorted(metrics.items())})

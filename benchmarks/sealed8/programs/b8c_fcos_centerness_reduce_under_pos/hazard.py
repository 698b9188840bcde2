# FCOS head loss: reduce_mean of the centerness denominator sits inside `if num_pos > 0`
# Source: https://github.com/open-mmlab/mmdetection/issues/4724 (port of an mmdetection
# torch.distributed bug to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def reduce_mean(value):
    """Average a scalar over all processes (mmdet.core.utils.reduce_mean)."""
    gathered = multihost_utils.process_allgather(jnp.asarray(value, jnp.float32))
    return jnp.mean(gathered)


@dataclass
class FCOSHeadConfig:
    num_points: int = 32
    center_sampling_radius: float = 1.5
    iou_threshold: float = 0.5


class FCOSHead:
    def __init__(self, cfg: FCOSHeadConfig):
        self.cfg = cfg

    def get_targets(self, gt_boxes: np.ndarray, points: np.ndarray):
        # a point is positive when it falls inside some gt box
        inside = ((points[:, None, 0] >= gt_boxes[None, :, 0]) & (points[:, None, 0] <= gt_boxes[None, :, 2])
                  & (points[:, None, 1] >= gt_boxes[None, :, 1]) & (points[:, None, 1] <= gt_boxes[None, :, 3]))
        labels = inside.any(axis=1) if gt_boxes.size else np.zeros(len(points), bool)
        centerness = np.clip(np.linspace(0.2, 1.0, len(points)), 0, 1)
        return labels, centerness

    def loss(self, cls_scores, bbox_preds, gt_boxes, points):
        labels, centerness_targets = self.get_targets(gt_boxes, points)
        pos_inds = np.nonzero(labels)[0]
        num_pos = reduce_mean(float(len(pos_inds)))
        num_pos = jnp.maximum(num_pos, 1.0)
        loss_cls = jnp.sum(jax.nn.softplus(-cls_scores[labels])) + jnp.sum(jax.nn.softplus(cls_scores[~labels]))
        loss_cls = loss_cls / num_pos
        if len(pos_inds) > 0:
            pos_centerness_targets = jnp.asarray(centerness_targets[pos_inds])
            centerness_denorm = jnp.maximum(reduce_mean(jnp.sum(pos_centerness_targets)), 1e-6)
            pos_bbox = bbox_preds[pos_inds]
            loss_bbox = jnp.sum(jnp.abs(pos_bbox).sum(-1) * pos_centerness_targets) / centerness_denorm
        else:
            loss_bbox = jnp.sum(bbox_preds) * 0.0
        return {"loss_cls": loss_cls, "loss_bbox": loss_bbox}


def make_image_batch(process_id: int, step: int):
    rng = np.random.default_rng(100 + step)
    points = rng.uniform(0, 64, size=(32, 2))
    # process 1's second image is background only: no gt boxes at all
    if process_id == 1 and step == 1:
        gt_boxes = np.zeros((0, 4))
    else:
        gt_boxes = np.array([[8.0, 8.0, 40.0, 40.0], [30.0, 20.0, 60.0, 50.0]])
    return gt_boxes, points


def main():
    head = FCOSHead(FCOSHeadConfig())
    cls_scores = jnp.linspace(-1.0, 1.0, 32)
    bbox_preds = jnp.ones((32, 4)) * 0.5
    totals = []
    for step in range(3):
        gt_boxes, points = make_image_batch(jax.process_index(), step)
        losses = head.loss(cls_scores, bbox_preds, gt_boxes, points)
        # log_vars: every loss is averaged over processes before logging
        logged = {k: float(reduce_mean(v)) for k, v in sorted(losses.items())}
        totals.append(round(sum(logged.values()), 4))
    print(f"RESULT losses {totals}", flush=True)
    multihost_utils.sync_global_devices("fcos_done")
    print("RESULT done", flush=True)


if __name__ == "__main__":
    main()

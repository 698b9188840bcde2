# Evaluation gathers each process's kept detections; the number kept differs per process
# Source: https://github.com/pytorch/xla/issues/8660
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SCORE_THRESHOLD = 0.5
IMAGES_PER_HOST = 6
ANCHORS = 8


@jax.jit
def detector(w, images):
    return jax.nn.sigmoid(images @ w)  # (images, anchors) scores, computed on the global batch


def local_images():
    rng = np.random.default_rng(7 + jax.process_index())
    return rng.normal(size=(IMAGES_PER_HOST, 5)).astype(np.float32)


def postprocess(scores, image_ids):
    """Keep (image id, anchor, score) rows above the threshold, like NMS output."""
    img, anchor = np.nonzero(scores > SCORE_THRESHOLD)
    return np.stack([image_ids[img], anchor, scores[img, anchor]], axis=1).astype(np.float32)


def all_gather_detections(dets):
    return np.asarray(multihost_utils.process_allgather(dets, tiled=True))


def average_precision(dets, num_images):
    if len(dets) == 0:
        return 0.0
    order = np.argsort(-dets[:, 2], kind="stable")
    hits = (dets[order, 1] % 2 == 0).astype(np.float64)  # stand-in ground truth: even anchors
    precision = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    return float(np.sum(precision * hits) / max(1.0, hits.sum()))


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rows = NamedSharding(mesh, P("data"))
    w = jax.device_put(jnp.asarray(np.random.default_rng(0).normal(size=(5, ANCHORS)), jnp.float32),
                       NamedSharding(mesh, P()))
    images = jax.make_array_from_process_local_data(rows, local_images())
    scores = detector(w, images)
    local_scores = np.concatenate([np.asarray(s.data) for s in scores.addressable_shards])
    image_ids = jax.process_index() * IMAGES_PER_HOST + np.arange(IMAGES_PER_HOST)
    dets = postprocess(local_scores, image_ids)
    print("kept", len(dets), "detections on process", jax.process_index())
    all_dets = all_gather_detections(dets)
    all_dets = all_dets[np.lexsort((all_dets[:, 1], all_dets[:, 0]))]
    print("RESULT detections", len(all_dets))
    print("RESULT ap", round(average_precision(all_dets, jax.process_count() * IMAGES_PER_HOST), 4))


main()

# Validation end enters the IoU reduction for every configured dataloader, with zero statistics where a rank has none
# Source: https://github.com/NVIDIA-TAO/tao-pytorch/pull/74
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_CLASSES, H, W = 3, 4, 4
DATASET_NAMES = ["ade_val", "coco_panoptic_val"]
DATASET_SIZES = {0: 4, 1: 1}  # the second validation set has a single image


def shard_indices(n):
    """Distributed-sampler style split without padding: process p takes p, p + P, ..."""
    return list(range(jax.process_index(), n, jax.process_count()))


def load_image(dl_idx, i):
    rng = np.random.default_rng(1000 * dl_idx + i)
    image = rng.standard_normal((H, W, NUM_CLASSES)).astype(np.float32)
    label = rng.integers(0, NUM_CLASSES, size=(H, W))
    return image, label


@jax.jit
def predict(head, image):
    return jnp.argmax(image @ head, axis=-1)


def validation_step(head, dl_idx, i):
    image, label = load_image(dl_idx, i)
    pred = np.asarray(predict(head, image))
    inter = np.array([np.sum((pred == c) & (label == c)) for c in range(NUM_CLASSES)], np.float64)
    union = np.array([np.sum((pred == c) | (label == c)) for c in range(NUM_CLASSES)], np.float64)
    return {"dataloader_idx": dl_idx, "intersect": inter, "union": union}


def on_validation_epoch_end(outputs):
    outputs_by_dl = defaultdict(list)
    for out in outputs:
        outputs_by_dl[out["dataloader_idx"]].append(out)
    # a rank may have received no samples: still enter every configured dataloader's collective
    outputs_by_dl = {i: outputs_by_dl.get(i, []) for i in range(len(DATASET_NAMES))}
    miou = {}
    for dl_idx in sorted(outputs_by_dl):
        outs = outputs_by_dl[dl_idx]
        local = np.stack([sum((o["intersect"] for o in outs), np.zeros(NUM_CLASSES)),
                          sum((o["union"] for o in outs), np.zeros(NUM_CLASSES))])
        total = multihost_utils.process_allgather(local).sum(axis=0)  # all-reduce over processes
        miou[DATASET_NAMES[dl_idx]] = float(np.mean(total[0] / np.maximum(total[1], 1.0)))
    return miou


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    head = jax.device_put(np.eye(NUM_CLASSES, dtype=np.float32) * 2.0, NamedSharding(mesh, P()))
    head = np.asarray(head.addressable_data(0))  # replicated head, evaluated per process
    outputs = []
    for dl_idx in range(len(DATASET_NAMES)):
        for i in shard_indices(DATASET_SIZES[dl_idx]):
            outputs.append(validation_step(head, dl_idx, i))
    miou = on_validation_epoch_end(outputs)
    for name in DATASET_NAMES:
        print("RESULT miou", name, round(miou.get(name, float("nan")), 5))


main()

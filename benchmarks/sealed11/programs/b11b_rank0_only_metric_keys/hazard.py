# A detection trainer computes COCO-style AP on the main process only and then logs the metric dict with cross-process sync
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/7129
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

EPOCHS, IMAGES_PER_PROC, LR = 2, 6, 0.1
IOU_THRESHOLDS = {"AP50": 0.5, "AP75": 0.75}
MESH = jax.make_mesh((jax.device_count(),), ("proc",))


def to_global(x):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("proc")), np.asarray(x, np.float32))


@jax.jit
def global_mean(x):
    return jnp.mean(x, axis=0)


class Logger:
    def __init__(self):
        self.history = {}

    def log_dict(self, metrics, sync_dist=True):
        for name in sorted(metrics):  # each logged value is averaged over processes
            value = metrics[name]
            if sync_dist:
                value = float(global_mean(to_global([value])))
            self.history.setdefault(name, []).append(round(value, 5))


class COCOEvaluator:
    """Predictions are gathered to every process, but AP is only computed on the main process."""

    def evaluate(self, ious):
        all_ious = np.asarray(multihost_utils.process_allgather(ious, tiled=True))
        if jax.process_index() != 0:
            return {}
        res = {name: float(np.mean(all_ious >= thr)) for name, thr in IOU_THRESHOLDS.items()}
        res["AP"] = float(np.mean([np.mean(all_ious >= t) for t in np.arange(0.5, 0.96, 0.05)]))
        return res


def predict_ious(w, epoch):
    rng = np.random.default_rng(10 * jax.process_index() + epoch)
    return np.clip(rng.uniform(0.3, 1.0, IMAGES_PER_PROC) * w, 0.0, 1.0).astype(np.float32)


def main():
    w = 0.8
    logger, evaluator = Logger(), COCOEvaluator()
    for epoch in range(EPOCHS):
        local_grad = np.float32(-(1.0 - w) * (1 + jax.process_index()))
        w = w - LR * float(global_mean(to_global([local_grad])))  # data-parallel step
        metrics = evaluator.evaluate(predict_ious(w, epoch))
        logger.log_dict(metrics)  # validation_epoch_end
    print("RESULT weight", round(w, 5))
    print("RESULT logged", sorted(logger.history.items()))


main()

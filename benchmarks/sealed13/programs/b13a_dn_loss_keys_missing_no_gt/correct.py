# Detector training: reduce_dict first agrees on the union of loss keys, filling losses a rank skipped with zeros
# Source: https://github.com/Intellindust-AI-Lab/DEIMv2/pull/136
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
MAX_BOXES = 3


def load_batch(step):
    """Two images per process; boxes padded to MAX_BOXES with a validity mask."""
    rng = np.random.default_rng(100 * jax.process_index() + step)
    feats = rng.normal(size=(2, 4)).astype(np.float32)
    n_gt = rng.integers(1, MAX_BOXES + 1, size=2)
    if jax.process_index() == 1 and step == 2:
        n_gt[:] = 0                           # background-only images: no annotations on this host
    boxes = rng.uniform(size=(2, MAX_BOXES, 4)).astype(np.float32)
    mask = (np.arange(MAX_BOXES)[None, :] < n_gt[:, None]).astype(np.float32)
    return feats, boxes, mask


class Criterion:
    def __call__(self, pred, boxes, mask):
        losses = {"loss_vfl": float(np.mean((pred[:, None, :] - 0.5) ** 2)),
                  "loss_bbox": float(np.sum(np.abs(pred[:, None, :] - boxes) * mask[..., None]) / max(mask.sum(), 1.0))}
        if mask.sum() > 0:                    # denoising queries are built from the ground-truth boxes
            noisy = boxes + 0.05
            losses["loss_vfl_dn"] = float(np.mean((noisy - 0.5) ** 2 * mask[..., None]))
            losses["loss_bbox_dn"] = float(np.sum(np.abs(pred[:, None, :] - noisy) * mask[..., None]) / mask.sum())
        return losses


LOSS_NAMES = ("loss_bbox", "loss_bbox_dn", "loss_vfl", "loss_vfl_dn")


def reduce_dict(loss_dict):
    present = np.array([k in loss_dict for k in LOSS_NAMES], np.int32)
    union = np.asarray(multihost_utils.process_allgather(present)).max(axis=0)
    names = [k for k, on in zip(LOSS_NAMES, union) if on]   # same keys on every rank
    loss_dict = {k: loss_dict.get(k, 0.0) for k in names}
    values = np.array([loss_dict[k] for k in names], np.float32)
    gathered = np.asarray(multihost_utils.process_allgather(values))
    return dict(zip(names, gathered.mean(axis=0).tolist()))


@jax.jit
def train_step(w, feats, boxes, mask):
    def loss_fn(w):
        pred = jnp.tanh(feats @ w)
        return jnp.sum(jnp.abs(pred[:, None, :] - boxes) * mask[..., None]) / jnp.maximum(mask.sum(), 1.0)
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.1 * g, loss


def main():
    w = jax.device_put(np.eye(4, dtype=np.float32) * 0.3, REPL)
    criterion, history = Criterion(), []
    for step in range(4):
        feats, boxes, mask = load_batch(step)
        w, loss = train_step(w, *(jax.make_array_from_process_local_data(DATA, a) for a in (feats, boxes, mask)))
        pred = np.tanh(feats @ np.asarray(w.addressable_data(0)))
        logged = reduce_dict(criterion(pred, boxes, mask))
        history.append(round(logged["loss_bbox"], 4))
    print("RESULT train_loss", round(float(loss), 5))
    print("RESULT logged_loss_bbox", history)


if __name__ == "__main__":
    main()

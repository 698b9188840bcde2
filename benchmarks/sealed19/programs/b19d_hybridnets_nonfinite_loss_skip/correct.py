# HybridNets-style multi-task training (box regression + segmentation) with DDP gradient averaging (synchronized skip)
# Source: https://github.com/datvuthanh/HybridNets/issues/91
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEAT, NUM_SEG = 6, 3
OPT = {"lr": 0.05, "num_epochs": 2, "batch_size": 4, "steps_per_epoch": 6}


def init_model(key):
    k1, k2 = jax.random.split(key)
    return {"box_head": 0.1 * jax.random.normal(k1, (FEAT, 4)), "seg_head": 0.1 * jax.random.normal(k2, (FEAT, NUM_SEG))}


def model_with_loss(params, imgs, boxes, seg_labels):
    pred_boxes = imgs @ params["box_head"]
    wh = jnp.clip(boxes[:, 2:], 0.0, None)
    target = jnp.concatenate([boxes[:, :2], jnp.log(wh)], axis=1)
    reg_loss = jnp.mean(jnp.abs(pred_boxes - target))
    seg_logits = imgs @ params["seg_head"]
    seg_loss = -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(seg_logits), seg_labels[:, None], axis=1))
    return reg_loss + seg_loss, (reg_loss, seg_loss)


grad_fn = jax.jit(jax.value_and_grad(model_with_loss, has_aux=True))


def all_reduce_mean(grads):
    return jax.tree_util.tree_map(
        lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0), grads)


class BddDataset:
    def __init__(self, rank):
        rng = np.random.default_rng(500 + rank)
        n = OPT["batch_size"] * OPT["steps_per_epoch"]
        self.imgs = rng.normal(size=(n, FEAT)).astype(np.float32)
        self.boxes = np.round(np.abs(rng.normal(1.0, 0.5, size=(n, 4))), 1).astype(np.float32)
        self.seg = rng.integers(0, NUM_SEG, size=(n,))

    def batches(self):
        bs = OPT["batch_size"]
        for i in range(OPT["steps_per_epoch"]):
            sl = slice(i * bs, (i + 1) * bs)
            yield self.imgs[sl], self.boxes[sl], self.seg[sl]


def train(rank):
    params = init_model(jax.random.PRNGKey(42))
    dataset = BddDataset(rank)
    step = 0
    for epoch in range(OPT["num_epochs"]):
        for imgs, boxes, seg in dataset.batches():
            (loss, (reg_loss, seg_loss)), grads = grad_fn(params, imgs, boxes, seg)
            invalid = np.int32(loss == 0 or not np.isfinite(float(loss)))
            if np.asarray(multihost_utils.process_allgather(invalid)).max():
                continue
            grads = all_reduce_mean(grads)
            params = jax.tree_util.tree_map(lambda p, g: p - OPT["lr"] * g, params, grads)
            step += 1
        print(f"rank {rank} epoch {epoch} step {step} loss {float(loss):.4f}", flush=True)
    return params, step


def main():
    rank = jax.process_index()
    params, step = train(rank)
    multihost_utils.sync_global_devices("save_checkpoint")
    print("RESULT step", step)
    print("RESULT box_head_norm", round(float(jnp.linalg.norm(params["box_head"])), 4))
    print("RESULT seg_head_norm", round(float(jnp.linalg.norm(params["seg_head"])), 4))


if __name__ == "__main__":
    main()

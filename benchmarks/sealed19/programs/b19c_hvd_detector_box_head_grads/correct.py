# Single-stage detector fine-tuning with Horovod-style gradient averaging (ported to JAX)
# Source: https://github.com/horovod/horovod/issues/564
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {"feat_dim": 6, "num_classes": 3, "anchors": 8, "steps": 6, "lr": 0.05, "pos_iou": 0.5}


def init_model(key, cfg):
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "backbone.weight": jax.random.normal(k1, (cfg["feat_dim"], 8)) * 0.3,
        "cls_head.weight": jax.random.normal(k2, (8, cfg["num_classes"])) * 0.3,
        "box_head.weight": jax.random.normal(k3, (8, 4)) * 0.3,
    }


def cls_loss(params, feats, labels):
    h = jnp.tanh(feats @ params["backbone.weight"])
    logits = h @ params["cls_head.weight"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))


def box_loss(params, feats, boxes, pos_mask):
    h = jnp.tanh(feats @ params["backbone.weight"])
    pred = h @ params["box_head.weight"]
    err = jnp.sum(jnp.abs(pred - boxes), axis=1) * pos_mask
    return jnp.sum(err) / jnp.maximum(jnp.sum(pos_mask), 1.0)


def calc_grads(params, batch, cfg):
    grads = jax.grad(cls_loss)(params, batch["feats"], batch["labels"])
    grads = {k: v for k, v in grads.items() if k != "box_head.weight"}
    pos_mask = (batch["iou"] > cfg["pos_iou"]).astype(jnp.float32)
    if int(pos_mask.sum()) > 0:
        box_grads = jax.grad(box_loss)(params, batch["feats"], batch["boxes"], pos_mask)
        for name, g in box_grads.items():
            grads[name] = grads[name] + g if name in grads else g
    return grads


class DistributedOptimizer:
    """SGD whose step() averages each parameter's gradient over all workers."""

    def __init__(self, named_parameters, lr):
        self.names = sorted(named_parameters)
        self.lr = lr

    def allreduce(self, g):
        return np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0)

    def step(self, params, grads):
        new = dict(params)
        for name in self.names:
            g = grads[name] if name in grads else jnp.zeros_like(params[name])
            new[name] = params[name] - self.lr * self.allreduce(g)
        return new


def load_tiles(cfg):
    """Training tiles in dataset order: annotated object crops first, then background tiles."""
    rng = np.random.default_rng(7)
    tiles = []
    for i in range(2 * cfg["steps"]):
        iou_hi = 0.9 if i < cfg["steps"] else 0.45
        tiles.append({
            "feats": rng.normal(size=(cfg["anchors"], cfg["feat_dim"])).astype(np.float32),
            "labels": rng.integers(0, cfg["num_classes"], size=cfg["anchors"]),
            "boxes": rng.normal(size=(cfg["anchors"], 4)).astype(np.float32),
            "iou": rng.uniform(0.0, iou_hi, size=cfg["anchors"]).astype(np.float32),
        })
    return tiles


def shard(tiles, rank, world):
    per_worker = len(tiles) // world
    return tiles[rank * per_worker:(rank + 1) * per_worker]


def main():
    cfg = CONFIG
    rank = jax.process_index()
    params = init_model(jax.random.PRNGKey(0), cfg)
    optimizer = DistributedOptimizer(params.keys(), cfg["lr"])
    for step, batch in enumerate(shard(load_tiles(cfg), rank, jax.process_count())):
        grads = calc_grads(params, batch, cfg)
        params = optimizer.step(params, grads)
    checksum = sum(float(jnp.sum(jnp.abs(v))) for v in params.values())
    print("RESULT steps", cfg["steps"])
    print("RESULT param_checksum", round(checksum, 4))


if __name__ == "__main__":
    main()

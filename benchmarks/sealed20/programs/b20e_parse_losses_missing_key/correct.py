# Two-stage detector training step (mmdetection style): the model returns a dict of losses and
# accuracies, `_parse_losses` sums the loss terms and averages every logged variable across GPUs so the
# text/W&B logger shows global values; gradients are averaged across GPUs.
import os
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def all_reduce_mean(value):
    return np.asarray(multihost_utils.process_allgather(np.asarray(value, np.float32))).mean(axis=0)


def rpn_loss(params, feats, objectness):
    logits = feats @ params["rpn"]
    return jnp.mean(jnp.logaddexp(0.0, logits) - objectness * logits)


def roi_loss(params, feats, labels, mask):
    logp = jax.nn.log_softmax(feats @ params["roi"])
    nll = -jnp.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
    return jnp.sum(nll * mask) / jnp.maximum(mask.sum(), 1.0)


def forward_train(params, batch):
    losses = {"loss_rpn_cls": rpn_loss(params, batch["feats"], batch["objectness"])}
    pos = batch["objectness"] > 0.5
    losses["loss_cls"], losses["acc"] = None, None
    if pos.any():
        mask = pos.astype(np.float32)
        losses["loss_cls"] = roi_loss(params, batch["feats"], batch["labels"], mask)
        pred = np.asarray(jnp.argmax(batch["feats"] @ params["roi"], axis=1))
        losses["acc"] = 100.0 * float(((pred == batch["labels"]) * mask).sum() / mask.sum())
    return losses


def _parse_losses(losses):
    log_vars = OrderedDict()
    for loss_name, loss_value in losses.items():
        log_vars[loss_name] = loss_value
    loss = sum(value for key, value in log_vars.items() if "loss" in key and value is not None)
    log_vars["loss"] = loss
    for loss_name, loss_value in log_vars.items():
        present = loss_value is not None
        summed = all_reduce_mean([float(loss_value) if present else 0.0, float(present)])
        log_vars[loss_name] = float(summed[0] / summed[1]) if summed[1] > 0 else None
    return loss, log_vars


def total_loss(params, batch):
    return _sum_losses(forward_train_traced(params, batch))


def forward_train_traced(params, batch):
    losses = [rpn_loss(params, batch["feats"], batch["objectness"])]
    pos = (batch["objectness"] > 0.5).astype(jnp.float32)
    losses.append(roi_loss(params, batch["feats"], batch["labels"], pos))
    return losses


def _sum_losses(losses):
    return sum(losses)


def make_batches(rank, steps=6, n=12, dim=10, classes=4, object_rate=0.08):
    rng = np.random.default_rng(70 + rank)
    batches = []
    for _ in range(steps):
        feats = rng.normal(size=(n, dim)).astype(np.float32)
        objectness = (rng.uniform(size=n) < object_rate).astype(np.float32)
        batches.append({"feats": feats, "objectness": objectness, "labels": rng.integers(0, classes, n)})
    return batches


def main():
    rank = jax.process_index()
    key = jax.random.PRNGKey(5)
    params = {"rpn": jax.random.normal(key, (10,)) * 0.1, "roi": jax.random.normal(jax.random.fold_in(key, 1), (10, 4)) * 0.1}
    grad_fn = jax.jit(jax.grad(total_loss))
    history = []
    for step, batch in enumerate(make_batches(rank)):
        _, log_vars = _parse_losses(forward_train(params, batch))
        grads = grad_fn(params, batch)
        grads = {k: all_reduce_mean(v) for k, v in grads.items()}
        params = {k: params[k] - 0.5 * grads[k] for k in params}
        history.append(round(log_vars["loss"], 4))
        if rank == 0:
            print(f"Iter [{step + 1}] " + ", ".join(f"{k}: {v:.4f}" for k, v in log_vars.items() if v is not None))
    print("RESULT loss_history", history)
    print("RESULT roi_checksum", round(float(np.abs(np.asarray(params["roi"])).sum()), 4))


if __name__ == "__main__":
    main()

# Data-parallel classifier training with periodic validation; metrics are averaged over workers
# (as Horovod's MetricAverageCallback does) so every worker logs the same numbers.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Config:
    epochs: int = 6
    steps_per_epoch: int = 8
    batch_size: int = 32
    eval_every: int = 2
    eval_batches: int = 4
    hidden: int = 16
    classes: int = 3
    lr: float = 0.2


def make_split(rank, num_batches, batch_size, seed):
    rng = np.random.default_rng(seed + rank)
    centers = np.array([[2.0, 0.0], [-1.0, 1.5], [-1.0, -1.5]], dtype=np.float32)
    labels = rng.integers(0, 3, size=(num_batches, batch_size))
    points = centers[labels] + rng.normal(size=labels.shape + (2,)).astype(np.float32)
    return points, labels


def init_params(key, hidden, classes):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (2, hidden)) * 0.5, "b1": jnp.zeros(hidden),
            "w2": jax.random.normal(k2, (hidden, classes)) * 0.5, "b2": jnp.zeros(classes)}


def logits_fn(params, x):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    logp = jax.nn.log_softmax(logits_fn(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


@jax.jit
def eval_step(params, x, y):
    return loss_fn(params, x, y), jnp.mean(jnp.argmax(logits_fn(params, x), axis=1) == y)


def average_over_workers(tree):
    flat, treedef = jax.tree_util.tree_flatten(tree)
    out = [np.asarray(multihost_utils.process_allgather(np.asarray(v))).mean(axis=0) for v in flat]
    return jax.tree_util.tree_unflatten(treedef, out)


def evaluate(params, val_x, val_y):
    losses, accs = zip(*(eval_step(params, x, y) for x, y in zip(val_x, val_y)))
    metrics = {"val_loss": np.mean(losses), "val_accuracy": np.mean(accs)}
    return average_over_workers(metrics)


def main():
    cfg = Config()
    rank = jax.process_index()
    params = init_params(jax.random.PRNGKey(0), cfg.hidden, cfg.classes)
    train_x, train_y = make_split(rank, cfg.epochs * cfg.steps_per_epoch, cfg.batch_size, seed=100)
    val_x, val_y = make_split(rank, cfg.eval_batches, cfg.batch_size, seed=900)
    grad_fn = jax.jit(jax.grad(loss_fn))
    history = []

    for epoch in range(cfg.epochs):
        for i in range(cfg.steps_per_epoch):
            step = epoch * cfg.steps_per_epoch + i
            grads = average_over_workers(grad_fn(params, train_x[step], train_y[step]))
            params = jax.tree_util.tree_map(lambda p, g: p - cfg.lr * g, params, grads)
        if (epoch + 1) % cfg.eval_every == 0:
            metrics = evaluate(params, val_x, val_y)
            history.append(round(float(metrics["val_accuracy"]), 4))
            if rank == 0:
                print(f"epoch {epoch + 1}: val_loss={float(metrics['val_loss']):.4f} "
                      f"val_accuracy={float(metrics['val_accuracy']):.4f}")

    final = evaluate(params, val_x, val_y)
    print("RESULT final_val_accuracy", round(float(final["val_accuracy"]), 4))
    print("RESULT final_val_loss", round(float(final["val_loss"]), 4))
    print("RESULT params_checksum", round(float(sum(jnp.sum(jnp.abs(p)) for p in jax.tree_util.tree_leaves(params))), 4))


if __name__ == "__main__":
    main()

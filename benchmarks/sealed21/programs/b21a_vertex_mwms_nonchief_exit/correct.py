import argparse
import json
import logging
import os
import sys
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_COLS = ["dayofweek", "hourofday", "trip_distance", "trip_miles", "trip_seconds"]
DEFAULT_HPARAMS = dict(batch_size=32, epochs=3, learning_rate=0.05, label="total_fare",
                       distribute_strategy="multi")

logging.getLogger().setLevel(logging.INFO)


def create_dataset(split, hparams):
    rng = np.random.default_rng({"train": 1, "valid": 2, "test": 3}[split] * 100 + jax.process_index())
    n = 4 * hparams["batch_size"]
    x = rng.normal(size=(n, len(NUM_COLS))).astype(np.float32)
    y = (x @ np.array([0.5, 0.1, 2.0, 1.5, 0.3], np.float32) + 7.0).astype(np.float32)
    return [(x[i:i + hparams["batch_size"]], y[i:i + hparams["batch_size"]])
            for i in range(0, n, hparams["batch_size"])]


def _is_chief():
    return jax.process_index() == 0


def _get_temp_dir(dirpath, task_id):
    temp_dir = os.path.join(dirpath, "workertemp_" + str(task_id))
    os.makedirs(temp_dir, exist_ok=True)
    return temp_dir


def _loss(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


_grad = jax.jit(jax.value_and_grad(_loss))


def all_reduce_mean(tree):
    return jax.tree_util.tree_map(
        lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), tree)


def fit(params, train_ds, hparams):
    for epoch in range(hparams["epochs"]):
        for x, y in train_ds:
            loss, grads = _grad(params, x, y)
            grads = all_reduce_mean(grads)
            params = jax.tree_util.tree_map(lambda p, g: p - hparams["learning_rate"] * g, params, grads)
        logging.info(f"epoch {epoch} loss {float(loss):.4f}")
    return params


def save_model(params, path):
    os.makedirs(path, exist_ok=True)
    host = jax.tree_util.tree_map(lambda p: np.asarray(multihost_utils.process_allgather(p))[0], params)
    np.savez(os.path.join(path, "weights.npz"), **host)
    multihost_utils.sync_global_devices("save_model")


def evaluate(params, test_ds):
    sums = np.zeros(2, np.float32)
    for x, y in test_ds:
        pred = np.asarray(x @ params["w"] + params["b"])
        sums += [np.sum((pred - y) ** 2), len(y)]
    total = np.asarray(multihost_utils.process_allgather(sums)).sum(0)
    return {"mean_squared_error": float(total[0] / total[1])}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=os.path.join(tempfile.gettempdir(), f"model_{os.environ.get('JOB_ID', 'local')}"))
    parser.add_argument("--hparams", default={}, type=json.loads)
    args = parser.parse_args()
    hparams = {**DEFAULT_HPARAMS, **args.hparams}
    logging.info(f"Using model hyper-parameters: {hparams}")

    train_ds = create_dataset("train", hparams)
    test_ds = create_dataset("test", hparams)
    params = {"w": jnp.zeros(len(NUM_COLS)), "b": jnp.zeros(())}
    params = fit(params, train_ds, hparams)

    # non-chief workers write to a temporary location, the chief to the model dir
    model_dir = args.model if _is_chief() else _get_temp_dir(args.model, jax.process_index())

    logging.info(f"Save model to: {model_dir}")
    save_model(params, model_dir)
    eval_metrics = evaluate(params, test_ds)
    print("RESULT mean_squared_error", round(eval_metrics["mean_squared_error"], 4))
    print("RESULT bias", round(float(params["b"]), 4))
    if _is_chief():
        with open(os.path.join(args.model, "metrics.json"), "w") as fp:
            json.dump(eval_metrics, fp)


if __name__ == "__main__":
    main()

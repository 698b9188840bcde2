# docTR-style text-detection training reference script, data-parallel over all processes.
# Rank 0 loads the validation set (and evaluates on it); every rank builds the model, trains on
# its own shard of the training set and averages gradients with the other ranks.
import datetime
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ANNOTATIONS = {"img_0.jpg": {"words": [[1, 2, 5, 6]], "artefacts": [[0, 0, 1, 1]]},
              "img_1.jpg": {"words": [[3, 1, 7, 2]], "artefacts": []},
              "img_2.jpg": {"words": [], "artefacts": [[2, 2, 3, 3]]}}


class DetectionDataset:
    def __init__(self, labels, seed, num_samples=24, feat_dim=10):
        self.class_names = sorted({k for target in labels.values() for k in target})
        rng = np.random.default_rng(seed)
        self.x = rng.normal(size=(num_samples, feat_dim)).astype(np.float32)
        self.y = (rng.random(size=(num_samples, len(self.class_names))) < 0.5).astype(np.float32)

    def batches(self, batch_size):
        for i in range(0, len(self.x) - batch_size + 1, batch_size):
            yield self.x[i:i + batch_size], self.y[i:i + batch_size]


def broadcast_object(obj):
    payload = np.frombuffer(json.dumps(obj).encode(), np.uint8)
    size = int(multihost_utils.broadcast_one_to_all(np.int32(payload.size)))
    buf = np.zeros(size, np.uint8)
    buf[:min(size, payload.size)] = payload[:size]
    return json.loads(bytes(np.asarray(multihost_utils.broadcast_one_to_all(buf))).decode())


def db_resnet50(class_names, feat_dim=10, seed=0):
    rng = np.random.default_rng(seed)
    return {"w": jnp.asarray(rng.normal(size=(feat_dim, len(class_names))) * 0.1, jnp.float32),
            "b": jnp.zeros(len(class_names), jnp.float32)}


@jax.jit
def loss_and_grad(params, x, y):
    def bce(p):
        logits = x @ p["w"] + p["b"]
        return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)
    return jax.value_and_grad(bce)(params)


def fit_one_epoch(params, train_set, lr=0.5, batch_size=4):
    losses = []
    for x, y in train_set.batches(batch_size):
        loss, grads = loss_and_grad(params, x, y[:, :params["b"].shape[0]])
        grads = jax.tree_util.tree_map(
            lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), grads)
        params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        losses.append(float(loss))
    return params, float(np.mean(losses))


def main(epochs=2):
    rank = jax.process_index()
    if rank == 0:
        val_set = DetectionDataset(ANNOTATIONS, seed=7)
        class_names = val_set.class_names
    else:
        class_names = ["words"]

    model = db_resnet50(class_names)
    train_set = DetectionDataset(ANNOTATIONS, seed=100 + rank)
    exp_name = broadcast_object(f"db_resnet50_{datetime.datetime.now():%Y%m%d-%H%M%S-%f}")

    for epoch in range(epochs):
        model, train_loss = fit_one_epoch(model, train_set)
        if rank == 0:
            x, y = val_set.x, val_set.y
            val_loss, _ = loss_and_grad(model, x, y)
            print(f"{exp_name} epoch {epoch + 1}: train {train_loss:.4f} val {float(val_loss):.4f}")

    w = np.asarray(multihost_utils.process_allgather(np.asarray(model["w"])))
    print("RESULT class_names", class_names)
    print("RESULT weights", np.round(w[0], 4).ravel().tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()

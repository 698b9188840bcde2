# Lightning-style gather_all_tensors that first gathers sizes, pads to the max and trims, for per-process detection lists
# Source: https://github.com/Lightning-AI/pytorch-lightning/pull/12630
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SCORE_THRESHOLD = 0.5


def gather_all_tensors(result):
    """Gather a host tensor from every process and return the per-process list (sizes may differ)."""
    local_size = np.array(result.shape, np.int32)
    sizes = np.asarray(multihost_utils.process_allgather(local_size))
    max_size = sizes.max(axis=0)
    padded = np.zeros(tuple(max_size), result.dtype)
    padded[tuple(slice(0, s) for s in result.shape)] = result
    gathered = np.asarray(multihost_utils.process_allgather(padded))
    return [gathered[i][tuple(slice(0, s) for s in sizes[i])] for i in range(gathered.shape[0])]


@jax.jit
def detect(w, images):
    scores = jax.nn.sigmoid(images @ w)
    boxes = jnp.stack([images[:, 0], images[:, 1], images[:, 0] + 1.0, images[:, 1] + 1.0], axis=1)
    return scores, boxes


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        return jnp.mean(jax.nn.softplus(-(2 * y - 1) * (x @ w)))
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.5 * g, loss


class DetectorModule:
    def __init__(self, mesh):
        self.batch = NamedSharding(mesh, P("data"))
        self.w = jax.device_put(np.array([1.0, -1.0, 0.5], np.float32), NamedSharding(mesh, P()))

    def shard(self, local):
        return jax.make_array_from_process_local_data(self.batch, local)

    def fit(self, rng, steps=5):
        for _ in range(steps):
            x = rng.normal(size=(6, 3)).astype(np.float32)
            y = (x[:, 0] > x[:, 1]).astype(np.float32)
            self.w, loss = train_step(self.w, self.shard(x), self.shard(y))
        return float(loss)

    def validation_epoch_end(self, images_local):
        scores, boxes = detect(self.w, self.shard(images_local))
        local_scores = np.asarray(scores.addressable_data(0))
        local_boxes = np.asarray(boxes.addressable_data(0))
        keep = local_scores > SCORE_THRESHOLD
        dets = np.concatenate([local_boxes[keep], local_scores[keep, None]], axis=1).astype(np.float32)
        per_process = gather_all_tensors(dets)
        all_dets = np.concatenate(per_process, axis=0)
        return all_dets


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    module = DetectorModule(mesh)
    loss = module.fit(np.random.default_rng(40 + jax.process_index()))
    val = np.random.default_rng(900 + jax.process_index()).normal(size=(8, 3)).astype(np.float32)
    val[: 2 + 3 * jax.process_index(), 0] += 4.0  # this shard's images hold more confident objects
    dets = module.validation_epoch_end(val)
    print("RESULT train_loss", round(loss, 5))
    print("RESULT num_detections", int(dets.shape[0]))
    print("RESULT mean_score", round(float(dets[:, 4].mean()), 4))


if __name__ == "__main__":
    main()

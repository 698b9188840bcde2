# Fully-sharded multimodal model: the image encoder (whose forward first all-gathers its sharded weights) runs only on processes whose batch has images
# Source: https://github.com/pytorch/pytorch/issues/148334
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HID, IMG, STEPS, LR = 8, 4, 4, 0.05


class ShardedParam:
    """One FSDP flat parameter: each process keeps rows [i::n]; forward all-gathers the full tensor."""

    def __init__(self, full):
        n, i = jax.process_count(), jax.process_index()
        self.shape = full.shape
        self.shard = np.ascontiguousarray(full.reshape(n, -1)[i])

    def unshard(self):
        return np.asarray(multihost_utils.process_allgather(self.shard, tiled=True)).reshape(self.shape)

    def apply_grad(self, full_grad):
        n, i = jax.process_count(), jax.process_index()
        summed = np.asarray(multihost_utils.process_allgather(full_grad.reshape(n, -1)[i][None])).sum(0)
        self.shard = self.shard - LR * summed / n      # reduce-scatter of the gradient


@jax.jit
def multimodal_loss_and_grads(head, enc, x0, x1, y, img_scale):
    def loss_fn(head, enc):
        h = x0 + img_scale * jnp.tanh(x1 @ enc)
        return jnp.mean((h @ head - y) ** 2)
    return jax.value_and_grad(loss_fn, argnums=(0, 1))(head, enc)


@jax.jit
def text_loss_and_grad(head, x0, y):
    return jax.value_and_grad(lambda head: jnp.mean((x0 @ head - y) ** 2))(head)


class CombinedModel:
    def __init__(self):
        rng = np.random.default_rng(0)
        self.encoder = ShardedParam(rng.normal(size=(IMG, HID)).astype(np.float32) * 0.3)
        self.head = ShardedParam(rng.normal(size=(HID,)).astype(np.float32) * 0.3)

    def train_step(self, x0, x1, y):
        head = self.head.unshard()
        if x1 is not None:
            enc = self.encoder.unshard()
            loss, (g_head, g_enc) = multimodal_loss_and_grads(head, enc, x0, x1, y, 1.0)
            self.encoder.apply_grad(np.asarray(g_enc))
        else:
            loss, g_head = text_loss_and_grad(head, x0, y)
        self.head.apply_grad(np.asarray(g_head))
        return float(loss)


def local_batch(step):
    rng = np.random.default_rng(50 * step + jax.process_index())
    x0 = rng.normal(size=(6, HID)).astype(np.float32)
    y = x0.sum(1).astype(np.float32) * 0.2
    has_images = not (jax.process_index() == 1 and step == 2)    # text-only batch on one rank
    x1 = rng.normal(size=(6, IMG)).astype(np.float32) if has_images else None
    return x0, x1, y


def main():
    model = CombinedModel()
    losses = []
    for step in range(STEPS):
        losses.append(model.train_step(*local_batch(step)))
    mean_losses = np.asarray(multihost_utils.process_allgather(np.array(losses, np.float32))).mean(0)
    print("RESULT mean_losses", np.round(mean_losses, 4).tolist())
    print("RESULT head", np.round(model.head.unshard(), 4).tolist())
    print("RESULT encoder_sum", round(float(model.encoder.unshard().sum()), 4))


if __name__ == "__main__":
    main()

# EMANet-style segmentation head trained data-parallel: every worker runs the EM attention unit
# (EMAU) on its own images, keeps the bases `mu` as a buffer updated by a moving average, and
# averages the gradients of the 1x1 projection across workers.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class dist:
    @staticmethod
    def get_world_size():
        return jax.process_count()

    @staticmethod
    def all_reduce(x):
        return np.asarray(multihost_utils.process_allgather(np.asarray(x))).sum(0)

    @staticmethod
    def reduce(x, dst=0):
        gathered = np.asarray(multihost_utils.process_allgather(np.asarray(x)))
        return gathered.sum(0) if jax.process_index() == dst else np.asarray(x)


def l2_normalize(x, axis):
    return x / np.maximum(np.linalg.norm(x, axis=axis, keepdims=True), 1e-12)


class EMAU:
    def __init__(self, c, k, stage_num=3, momentum=0.1, seed=0):
        rng = np.random.default_rng(seed)
        tmp_mu = rng.normal(0.0, np.sqrt(2.0 / k), size=(1, c, k)).astype(np.float32)
        self.mu = l2_normalize(tmp_mu, axis=1)
        self.stage_num = stage_num
        self.momentum = momentum
        self.training = True

    @staticmethod
    @jax.jit
    def _em(x, mu):
        z = jax.nn.softmax(jnp.einsum("bnc,bck->bnk", x, mu), axis=2)
        z_ = z / (1e-6 + z.sum(axis=1, keepdims=True))
        mu = jnp.einsum("bnc,bnk->bck", x, z_)
        return z, mu / jnp.maximum(jnp.linalg.norm(mu, axis=1, keepdims=True), 1e-12)

    def forward(self, x):
        b, n, c = x.shape
        mu = np.tile(self.mu, (b, 1, 1))
        for _ in range(self.stage_num):
            z, mu = self._em(x, mu)
        mu = np.asarray(mu)
        x_rec = np.einsum("bck,bnk->bnc", mu, np.asarray(z))
        if self.training:
            mu = mu.mean(axis=0, keepdims=True)
            mu = l2_normalize(mu, axis=1)
            mu = self.mu * (1 - self.momentum) + mu * self.momentum
            if dist.get_world_size() > 1:
                mu = dist.all_reduce(mu)
                mu /= dist.get_world_size()
            self.mu = mu
        return x_rec


class EMANetHead:
    def __init__(self, c, num_classes, k):
        self.emau = EMAU(c, k)
        self.w = np.zeros((c, num_classes), np.float32)
        self._grad = jax.jit(jax.grad(self._loss))

    @staticmethod
    def _loss(w, feats, labels):
        logits = feats @ w
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[..., None], -1))

    def train_step(self, feats, labels, lr=0.5):
        rec = self.emau.forward(feats)
        g = np.asarray(self._grad(self.w, rec, labels))
        g = dist.all_reduce(g) / dist.get_world_size()
        self.w = self.w - lr * g

    def predict(self, feats):
        self.emau.training = False
        rec = self.emau.forward(feats)
        self.emau.training = True
        return np.argmax(rec @ self.w, axis=-1)


def cityscapes_shard(rank, steps, batch=2, pixels=64, c=8, num_classes=4):
    rng = np.random.default_rng(100 + rank)
    centers = np.random.default_rng(7).normal(size=(num_classes, c)).astype(np.float32)
    for _ in range(steps):
        labels = rng.integers(0, num_classes, size=(batch, pixels))
        feats = centers[labels] + 0.8 * rng.normal(size=(batch, pixels, c)).astype(np.float32)
        yield feats.astype(np.float32), labels.astype(np.int32)


def main():
    rank = jax.process_index()
    head = EMANetHead(c=8, num_classes=4, k=6)
    for feats, labels in cityscapes_shard(rank, steps=8):
        head.train_step(feats, labels)
    val_feats, val_labels = next(cityscapes_shard(99, steps=1, batch=4))
    pred = head.predict(val_feats)
    miou_inter = dist.all_reduce(np.array([(pred == val_labels).sum()], np.float32))
    print("RESULT bases_checksum", np.round(float(np.abs(head.emau.mu).sum()), 5))
    print("RESULT bases_head", np.round(head.emau.mu[0, :, 0], 4).tolist())
    print("RESULT val_correct_pixels", int(miou_inter[0]))


if __name__ == "__main__":
    main()

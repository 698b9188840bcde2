# Multimodal fine-tuning: a text-only batch runs the vision tower on a dummy image, so every gradient bucket has the same layout
# Source: https://github.com/modelscope/ms-swift/pull/9443
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPLICATED = NamedSharding(MESH, P())


@dataclass
class SFTConfig:
    dim: int = 4
    patch: int = 6
    steps: int = 3
    lr: float = 0.1


def init_params(cfg):
    rng = np.random.default_rng(0)
    return {"vision_tower": rng.normal(size=(cfg.patch, cfg.dim)).astype(np.float32) * 0.3,
            "llm": rng.normal(size=(cfg.dim,)).astype(np.float32) * 0.3}


def text_loss(llm, tokens, targets):
    return jnp.mean((tokens @ llm - targets) ** 2)


def multimodal_loss(params, tokens, targets, pixels):
    image_embeds = jnp.tanh(pixels @ params["vision_tower"])  # merged into the token sequence
    merged = jnp.concatenate([image_embeds, tokens], axis=0)
    pad = jnp.zeros(image_embeds.shape[0], targets.dtype)
    return text_loss(params["llm"], merged, jnp.concatenate([pad, targets]))


class DDPTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.params = init_params(cfg)
        self._mm_grad = jax.jit(jax.grad(multimodal_loss))
        self._text_grad = jax.jit(jax.grad(text_loss))
        self._allreduce = jax.jit(lambda g: jnp.mean(g, axis=0), out_shardings=REPLICATED)

    def local_grads(self, batch):
        if batch["pixels"] is None:
            dummy = np.zeros((1, self.cfg.patch), np.float32)  # tanh(0 @ W) = 0: a zero-gradient pass through the tower
            return self._mm_grad(self.params, batch["tokens"], batch["targets"], dummy)
        return self._mm_grad(self.params, batch["tokens"], batch["targets"], batch["pixels"])

    def reduce_bucket(self, grads):
        names = [n for n in sorted(self.params) if n in grads]
        flat = np.concatenate([np.asarray(grads[n]).ravel() for n in names])
        mean = np.asarray(self._allreduce(jax.make_array_from_process_local_data(ROWS, flat[None, :])))
        out, offset = {}, 0
        for n in names:
            size = self.params[n].size
            out[n] = mean[offset:offset + size].reshape(self.params[n].shape)
            offset += size
        return out

    def train_step(self, batch):
        grads = self.reduce_bucket(self.local_grads(batch))
        for n, g in grads.items():
            self.params[n] = self.params[n] - self.cfg.lr * g


def local_batch(step, cfg):
    rng = np.random.default_rng(31 * jax.process_index() + step)
    tokens = rng.normal(size=(5, cfg.dim)).astype(np.float32)
    has_image = not (jax.process_index() == 1 and step == 1)  # this rank's shard is a text-only sample
    pixels = rng.normal(size=(2, cfg.patch)).astype(np.float32) if has_image else None
    return {"tokens": tokens, "targets": tokens.sum(axis=1), "pixels": pixels}


def main():
    cfg = SFTConfig()
    trainer = DDPTrainer(cfg)
    for step in range(cfg.steps):
        trainer.train_step(local_batch(step, cfg))
    for name in sorted(trainer.params):
        print("RESULT", name, np.round(trainer.params[name].ravel(), 4).tolist())


if __name__ == "__main__":
    main()

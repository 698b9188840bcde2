# CLIP training: evaluate() runs on the master only but calls the DDP-wrapped model, whose forward syncs buffers
# Source: https://github.com/mlfoundations/open_clip/issues/1121 (port of open_clip_train's evaluate() to JAX; fixed by PR #1134)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class Args:
    epochs: int = 3
    val_frequency: int = 5
    distributed: bool = True
    horovod: bool = False
    rank: int = 0
    lr: float = 0.05


def is_master(args):
    return args.rank == 0


class TinyCLIP:
    def __init__(self, dim=6):
        rng = np.random.default_rng(0)
        self.params = {"img": jnp.asarray(rng.normal(size=(dim, dim)).astype(np.float32)),
                       "txt": jnp.asarray(rng.normal(size=(dim, dim)).astype(np.float32))}
        self.buffers = {"logit_scale": np.array([np.log(1 / 0.07)], np.float32)}

    def __call__(self, params, images, texts):
        img = images @ params["img"]
        txt = texts @ params["txt"]
        img = img / jnp.linalg.norm(img, axis=1, keepdims=True)
        txt = txt / jnp.linalg.norm(txt, axis=1, keepdims=True)
        return jnp.exp(self.buffers["logit_scale"][0]) * img @ txt.T


class DistributedDataParallel:
    """Replicates buffers from rank 0 at every forward (broadcast_buffers=True), averages gradients in training."""

    def __init__(self, module, mesh):
        self.module, self.mesh = module, mesh
        self._grad = jax.jit(jax.grad(self._loss), out_shardings=NamedSharding(mesh, P()))

    def _loss(self, params, images, texts):
        logits = self.module(params, images, texts)
        labels = jnp.arange(logits.shape[0]) % logits.shape[1]
        return -jnp.mean(jax.nn.log_softmax(logits, axis=1)[jnp.arange(logits.shape[0]), labels])

    def __call__(self, images, texts):
        self.module.buffers = multihost_utils.broadcast_one_to_all(self.module.buffers)
        return self.module(self.module.params, images, texts)

    def module_forward(self):
        module = self.module
        return lambda images, texts: module(module.params, images, texts)

    def train_step(self, images, texts, lr):
        self.module.buffers = multihost_utils.broadcast_one_to_all(self.module.buffers)
        shard = lambda a: jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("dp")), a)
        grads = self._grad(self.module.params, shard(images), shard(texts))
        self.module.params = jax.tree.map(lambda p, g: p - lr * g, self.module.params, grads)


def train_one_epoch(model, epoch, args):
    rng = np.random.default_rng(1000 * epoch + args.rank)
    for _ in range(3):
        model.train_step(rng.normal(size=(4, 6)).astype(np.float32), rng.normal(size=(4, 6)).astype(np.float32), args.lr)


def evaluate(model, epoch, args):
    metrics = {}
    if not is_master(args):
        return metrics
    if args.distributed and not args.horovod:
        model = model.module_forward()  # unwrap DDP for single process eval
    if args.val_frequency and ((epoch % args.val_frequency) == 0 or epoch == args.epochs):
        rng = np.random.default_rng(77)
        images, texts = rng.normal(size=(8, 6)).astype(np.float32), rng.normal(size=(8, 6)).astype(np.float32)
        logits = model(images, texts)
        metrics["image_to_text_R@1"] = float(jnp.mean(jnp.argmax(logits, axis=1) == jnp.arange(8)))
    return metrics


def main():
    args = Args(rank=jax.process_index())
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
    model = DistributedDataParallel(TinyCLIP(), mesh)
    for epoch in range(args.epochs):
        train_one_epoch(model, epoch, args)
        completed_epoch = epoch + 1
        metrics = evaluate(model, completed_epoch, args)
        if metrics:
            print("eval", completed_epoch, metrics)
        if args.distributed:
            multihost_utils.sync_global_devices(f"after_eval_{completed_epoch}")
    w = multihost_utils.process_allgather(np.asarray(model.module.params["img"]))
    print("RESULT img_proj_sum", round(float(w.sum()), 4))


if __name__ == "__main__":
    main()

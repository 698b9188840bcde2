# LayerDrop under FSDP: every process draws the layers to skip from the same (seed, step) RNG
# Source: https://github.com/facebookresearch/fairseq2/pull/484
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import functools
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class EncoderConfig:
    num_layers: int = 4
    dim: int = 4
    layer_drop_p: float = 0.3
    batch_per_process: int = 2
    steps: int = 4
    seed: int = 2
    lr: float = 0.05


MESH = Mesh(np.array(jax.devices()), ("fsdp",))
FSDP = NamedSharding(MESH, P("fsdp"))


def init_layers(cfg):
    rng = np.random.default_rng(cfg.seed)
    return [jax.device_put(rng.normal(scale=0.4, size=(cfg.dim, cfg.dim)).astype(np.float32), FSDP)
            for _ in range(cfg.num_layers)]


def encoder(layers, x, keep):
    for w, k in zip(layers, keep):
        if k:                               # a dropped layer is not run at all (no all-gather of its shard)
            x = x + jnp.tanh(x @ w)
    return x


@functools.partial(jax.jit, static_argnames="keep")
def train_step(layers, x, y, keep):
    def loss_fn(ls):
        return jnp.mean((encoder(ls, x, keep).sum(axis=1) - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(layers)
    return [w - 0.05 * g for w, g in zip(layers, grads)], loss


class LayerDropSampler:
    def __init__(self, cfg):
        self.cfg = cfg
        self.rng = None

    def sample(self, step):
        self.rng = np.random.default_rng([self.cfg.seed, step])  # same stream on every rank
        return tuple(bool(self.rng.random() >= self.cfg.layer_drop_p) for _ in range(self.cfg.num_layers))


def make_batch(cfg, step):
    rng = np.random.default_rng(1000 + 10 * step + jax.process_index())
    x = rng.normal(size=(cfg.batch_per_process, cfg.dim)).astype(np.float32)
    y = np.cos(x).sum(axis=1).astype(np.float32)
    return jax.make_array_from_process_local_data(FSDP, x), jax.make_array_from_process_local_data(FSDP, y)


def main():
    cfg = EncoderConfig()
    layers = init_layers(cfg)
    sampler = LayerDropSampler(cfg)
    losses = []
    for step in range(cfg.steps):
        x, y = make_batch(cfg, step)
        keep = sampler.sample(step)
        layers, loss = train_step(layers, x, y, keep)
        losses.append(float(loss))
    multihost_utils.sync_global_devices("train_end")
    print("RESULT losses", " ".join(f"{l:.5f}" for l in losses))
    total = sum(float(np.asarray(multihost_utils.process_allgather(w, tiled=True)).sum()) for w in layers)
    print("RESULT weight_sum", f"{total:.5f}")


if __name__ == "__main__":
    main()

# Multimodal projector pre-training: a freshly initialised projector is trained on frozen vision features, data-parallel
# Source: https://github.com/haotian-liu/LLaVA/issues/1440
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))


@dataclass
class PretrainConfig:
    seed: int = 42
    vision_dim: int = 6
    hidden: int = 4
    per_device_batch: int = 8
    steps: int = 5
    lr: float = 0.05


def build_projector(cfg, rng):
    """mm_projector: two linear layers; newly added, so it is randomly initialised (not loaded)."""
    return {
        "0.weight": (rng.normal(size=(cfg.vision_dim, cfg.hidden)) / np.sqrt(cfg.vision_dim)).astype(np.float32),
        "0.bias": np.zeros(cfg.hidden, np.float32),
        "2.weight": (rng.normal(size=(cfg.hidden, cfg.hidden)) / np.sqrt(cfg.hidden)).astype(np.float32),
        "2.bias": np.zeros(cfg.hidden, np.float32),
    }


def replicate(tree):
    return jax.tree.map(lambda x: multihost_utils.host_local_array_to_global_array(x, MESH, P()), tree)


def project(params, feats):
    h = jax.nn.gelu(feats @ params["0.weight"] + params["0.bias"])
    return h @ params["2.weight"] + params["2.bias"]


@jax.jit
def train_step(params, feats, targets, lr):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((project(p, feats) - targets) ** 2))(params)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss


def caption_batches(cfg, rng):
    for _ in range(cfg.steps):
        feats = rng.normal(size=(cfg.per_device_batch, cfg.vision_dim)).astype(np.float32)
        yield feats, np.tanh(feats[:, :cfg.hidden]).astype(np.float32)


def main():
    cfg = PretrainConfig()
    rank = jax.process_index()
    rng = np.random.default_rng(cfg.seed + rank)          # per-rank seed: data order / augmentation
    params = replicate(build_projector(cfg, rng))
    loss = None
    for feats, targets in caption_batches(cfg, rng):
        gf = multihost_utils.host_local_array_to_global_array(feats, MESH, P("dp"))
        gt = multihost_utils.host_local_array_to_global_array(targets, MESH, P("dp"))
        params, loss = train_step(params, gf, gt, cfg.lr)
    multihost_utils.sync_global_devices("pretrain done")
    print(f"RESULT loss {float(loss):.5f}")
    for name in sorted(params):
        print(f"RESULT {name} mean {float(jnp.mean(params[name])):.6f}")


if __name__ == "__main__":
    main()

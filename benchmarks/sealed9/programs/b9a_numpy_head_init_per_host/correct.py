# A task head added to pretrained weights is initialised from a fixed seed shared by every host
# Source: https://github.com/google/flax/issues/607
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class FinetuneConfig:
    hidden: int = 8
    num_labels: int = 3
    per_host_batch: int = 4
    steps: int = 5
    lr: float = 0.1
    seed: int = 42


def load_pretrained_encoder(cfg: FinetuneConfig):
    """Stand-in for converting a TF/PyTorch BERT checkpoint: deterministic on every host."""
    w = np.linspace(-1.0, 1.0, cfg.hidden * cfg.hidden, dtype=np.float32).reshape(cfg.hidden, cfg.hidden)
    return {"encoder": w}


def add_classifier_head(params, cfg: FinetuneConfig):
    params = dict(params)
    params["head"] = np.random.default_rng(cfg.seed).normal(0.0, 0.02, size=(cfg.hidden, cfg.num_labels)).astype(np.float32)
    return params


def replicate(params, mesh):
    rep = NamedSharding(mesh, P())
    return jax.tree.map(lambda x: jax.make_array_from_process_local_data(rep, x), params)


def host_batch(cfg: FinetuneConfig, step: int):
    rng = np.random.default_rng(1000 * step + jax.process_index())
    x = rng.normal(size=(cfg.per_host_batch, cfg.hidden)).astype(np.float32)
    y = rng.integers(0, cfg.num_labels, size=(cfg.per_host_batch,)).astype(np.int32)
    return x, y


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["encoder"])
    logits = h @ params["head"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss


def main():
    cfg = FinetuneConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    data = NamedSharding(mesh, P("data"))
    params = replicate(add_classifier_head(load_pretrained_encoder(cfg), cfg), mesh)
    loss = None
    for step in range(cfg.steps):
        x, y = host_batch(cfg, step)
        params, loss = train_step(params, jax.make_array_from_process_local_data(data, x),
                                  jax.make_array_from_process_local_data(data, y))
    head = np.asarray(params["head"].addressable_data(0))
    print("RESULT final_loss", round(float(loss.addressable_data(0)), 4))
    print("RESULT head_checksum", round(float(np.abs(head).sum()), 4))


main()

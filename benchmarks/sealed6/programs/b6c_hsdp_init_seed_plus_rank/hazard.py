# HSDP init: each rank seeds its parameter init with init_seed + rank, so the replica groups start from different weights
# Source: https://github.com/allenai/OLMo-core/pull/319 (port of the OLMo-core HSDP initialization bug to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class TransformerConfig:
    d_model: int = 8
    vocab: int = 16
    init_seed: int = 2025
    init_std: float = 0.02


def build_hsdp_mesh():
    # replicate over "dp_replicate" (one replica per process here), shard within a replica over "dp_shard"
    devices = np.array(jax.devices()).reshape(jax.process_count(), -1)
    return jax.sharding.Mesh(devices, ("dp_replicate", "dp_shard"))


class Transformer:
    def __init__(self, cfg: TransformerConfig, mesh):
        self.cfg, self.mesh = cfg, mesh
        self.param_specs = {"embed": P("dp_shard", None), "out": P(None, "dp_shard")}
        self.shapes = {"embed": (cfg.vocab, cfg.d_model), "out": (cfg.d_model, cfg.vocab)}

    def init_weights(self) -> dict:
        seed = self.cfg.init_seed + jax.process_index()
        rng = np.random.default_rng(seed)
        params = {}
        for name in sorted(self.shapes):
            full = (self.cfg.init_std * rng.standard_normal(self.shapes[name])).astype(np.float32)
            sharding = NamedSharding(self.mesh, self.param_specs[name])
            params[name] = jax.make_array_from_callback(full.shape, sharding, lambda idx, full=full: full[idx])
        return params

    @staticmethod
    def apply(params, tokens):
        return params["embed"][tokens] @ params["out"]


def make_train_step(model: Transformer, lr: float):
    @jax.jit
    def train_step(params, tokens, targets):
        def loss_fn(p):
            logits = Transformer.apply(p, tokens)
            logp = jax.nn.log_softmax(logits)
            return -jnp.mean(jnp.take_along_axis(logp, targets[:, None], axis=1))
        loss, grads = jax.value_and_grad(loss_fn)(params)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss
    return train_step


def main():
    cfg = TransformerConfig()
    mesh = build_hsdp_mesh()
    model = Transformer(cfg, mesh)
    params = model.init_weights()
    train_step = make_train_step(model, lr=0.5)
    batch = NamedSharding(mesh, P(("dp_replicate", "dp_shard")))
    data_rng = np.random.default_rng(77 + jax.process_index())
    for _ in range(5):
        tokens = data_rng.integers(0, cfg.vocab, size=(8,))
        targets = (tokens + 1) % cfg.vocab
        params, loss = train_step(params, jax.make_array_from_process_local_data(batch, tokens),
                                  jax.make_array_from_process_local_data(batch, targets))
    local_embed = np.asarray(params["embed"].addressable_data(0))
    print("RESULT loss", round(float(loss), 5))
    print("RESULT embed checksum", round(float(np.abs(local_embed).sum()), 5))


if __name__ == "__main__":
    main()

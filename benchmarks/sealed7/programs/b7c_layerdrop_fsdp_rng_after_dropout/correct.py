# LayerDrop in a fully-sharded encoder: each rank draws its own drop decisions, so the per-layer all-gathers differ
# Source: https://github.com/facebookresearch/fairseq/issues/3875 (port of fairseq's LayerDrop with the fully_sharded backend to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class EncoderConfig:
    layers: int = 6
    dim: int = 8
    dropout: float = 0.1
    encoder_layerdrop: float = 0.3
    max_sentences: int = 8
    seed: int = 1


class FullyShardedLayer:
    """One encoder layer wrapped on its own: its weight is sharded and gathered for every forward."""

    def __init__(self, mesh, w):
        self.mesh = mesh
        self.w = jax.device_put(w, NamedSharding(mesh, P("dp")))
        self._fwd = jax.jit(lambda w, x: jnp.tanh(x @ w) + x, out_shardings=NamedSharding(mesh, P("dp")))

    def __call__(self, x):
        return self._fwd(self.w, x)


class TransformerEncoder:
    def __init__(self, cfg: EncoderConfig, mesh):
        self.cfg, self.mesh, self.training = cfg, mesh, True
        rng = np.random.default_rng(0)
        self.layers = [FullyShardedLayer(mesh, (rng.normal(size=(cfg.dim, cfg.dim)) * 0.3).astype(np.float32))
                       for _ in range(cfg.layers)]
        self._loss = jax.jit(lambda x: jnp.mean(x ** 2), out_shardings=NamedSharding(mesh, P()))

    def embed(self, tokens, rng):
        x = np.sin(tokens[:, None] * np.arange(1, self.cfg.dim + 1)[None, :]).astype(np.float32)
        keep = rng.random(x.shape) >= self.cfg.dropout          # consumes one draw per element of this rank's batch
        x = np.where(keep, x / (1 - self.cfg.dropout), 0.0).astype(np.float32)
        padded = np.zeros((self.cfg.max_sentences, self.cfg.dim), np.float32)
        padded[:len(x)] = x
        return jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("dp")), padded)

    def forward(self, tokens, rng):
        x = self.embed(tokens, rng)
        for layer in self.layers:
            dropout_probability = rng.random()
            # run every layer so every rank issues the same gathers; LayerDrop only selects the output
            layer_out = layer(x)
            if not self.training or dropout_probability > self.cfg.encoder_layerdrop:
                x = layer_out
        return float(self._loss(x))


def token_batches(step):
    # batches are built by token count: the number of sentences per rank varies
    n = [5, 7, 3, 6][(step + jax.process_index()) % 4]
    return np.random.default_rng(step * 31 + jax.process_index()).integers(1, 50, size=n).astype(np.float32)


def main():
    cfg = EncoderConfig()
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
    encoder = TransformerEncoder(cfg, mesh)
    for update_num in range(4):
        rng = np.random.default_rng(cfg.seed + update_num)     # same seed on every rank, as set_torch_seed does
        loss = encoder.forward(token_batches(update_num), rng)
        print("RESULT update", update_num, "loss", round(loss, 5))


if __name__ == "__main__":
    main()

import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class FinetuneConfig:
    embed_dim: int = 8
    hidden_dim: int = 16
    batch_size: int = 4
    epochs: int = 1
    steps_per_epoch: int = 3
    lr: float = 0.05
    clip_grad_norm: float = 1.0
    seed: int = 0


def init_model(cfg, mesh):
    rng = np.random.default_rng(cfg.seed)
    host = {"w1": rng.normal(size=(cfg.embed_dim, cfg.hidden_dim)).astype(np.float32) * 0.3,
            "w2": rng.normal(size=(cfg.hidden_dim, 1)).astype(np.float32) * 0.3}
    shard = NamedSharding(mesh, P("fsdp"))
    return {k: jax.make_array_from_callback(v.shape, shard, lambda idx, v=v: v[idx]) for k, v in host.items()}


def loss_fn(params, tokens, labels):
    h = jnp.tanh(tokens @ params["w1"])
    pred = (h @ params["w2"])[:, 0]
    return jnp.mean((pred - labels) ** 2)


@jax.jit
def forward_backward(params, tokens, labels):
    return jax.value_and_grad(loss_fn)(params, tokens, labels)


@jax.jit
def global_grad_norm(grads):
    return jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree_util.tree_leaves(grads)))


@jax.jit
def clip_and_step(params, grads, max_norm, lr):
    total_norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree_util.tree_leaves(grads)))
    coef = jnp.minimum(1.0, max_norm / (total_norm + 1e-6))
    return jax.tree_util.tree_map(lambda p, g: p - lr * coef * g, params, grads)


class FullFinetuneRecipeDistributed:
    def __init__(self, cfg):
        self.cfg = cfg
        self.rank = jax.process_index()
        self.world_size = jax.process_count()
        self.mesh = Mesh(np.array(jax.devices()), ("fsdp",))
        self.data_sharding = NamedSharding(self.mesh, P("fsdp"))
        self.params = init_model(cfg, self.mesh)
        self.global_step = 0
        self.metric_log = []

    def _sampler_batches(self, epoch):
        rng = np.random.default_rng(1000 * epoch + self.rank)
        for _ in range(self.cfg.steps_per_epoch):
            tokens = rng.normal(size=(self.cfg.batch_size, self.cfg.embed_dim)).astype(np.float32)
            labels = np.sin(tokens.sum(-1)).astype(np.float32)
            yield tokens, labels

    def _to_global(self, local):
        return jax.make_array_from_process_local_data(self.data_sharding, local)

    def train(self):
        for epoch in range(self.cfg.epochs):
            for tokens, labels in self._sampler_batches(epoch):
                loss, grads = forward_backward(self.params, self._to_global(tokens), self._to_global(labels))
                grad_norm = global_grad_norm(grads)
                self.params = clip_and_step(self.params, grads, self.cfg.clip_grad_norm, self.cfg.lr)
                self.global_step += 1
                self.metric_log.append({"loss": float(loss), "grad_norm": float(grad_norm),
                                        "step": self.global_step})

    def cleanup(self):
        for entry in self.metric_log:
            print(f"RESULT step {entry['step']} loss {entry['loss']:.5f} grad_norm {entry['grad_norm']:.5f}")
        w2 = np.asarray(jax.jit(lambda w: w, out_shardings=NamedSharding(self.mesh, P()))(self.params["w2"]))
        print("RESULT w2_sum", round(float(w2.sum()), 5))


def main():
    recipe = FullFinetuneRecipeDistributed(FinetuneConfig())
    recipe.train()
    recipe.cleanup()


if __name__ == "__main__":
    main()

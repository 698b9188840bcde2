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
class Config:
    hidden: int = 8
    vocab: int = 16
    lr: float = 0.5
    max_norm: float = 0.5
    total_steps: int = 6
    per_device_batch: int = 8


class FSDPModel:
    """Embedding + head with parameters sharded over the fsdp axis (row-sharded like FSDP flat params)."""

    def __init__(self, config, mesh):
        self.mesh = mesh
        self.sharding = NamedSharding(mesh, P("fsdp"))
        rng = np.random.default_rng(0)
        init = {"embed": rng.normal(size=(config.vocab, config.hidden)).astype(np.float32),
                "head": rng.normal(size=(config.hidden, config.vocab)).astype(np.float32)}
        self.params = {k: jax.make_array_from_callback(v.shape, self.sharding, lambda idx, v=v: v[idx])
                       for k, v in init.items()}
        self.grads = None

    def clip_grad_norm_(self, max_norm):
        total_norm = jnp.sqrt(sum(jnp.sum(g ** 2) for g in jax.tree_util.tree_leaves(self.grads)))
        clip_coef = jnp.minimum(max_norm / (total_norm + 1e-6), 1.0)
        self.grads = jax.tree_util.tree_map(lambda g: g * clip_coef, self.grads)
        return float(total_norm)

    def parameters(self):
        return self.grads


def clip_grad_norm_(grads, max_norm):
    """Clip the gradients to ``max_norm`` in place and return their total norm (torch.nn.utils.clip_grad_norm_)."""
    local = {k: np.asarray(g.addressable_data(0)) for k, g in grads.items()}
    total_norm = float(np.sqrt(sum(np.sum(g ** 2) for g in local.values())))
    clip_coef = min(max_norm / (total_norm + 1e-6), 1.0)
    clipped = {k: jax.make_array_from_process_local_data(grads[k].sharding, local[k] * clip_coef, grads[k].shape)
               for k in grads}
    grads.update(clipped)
    return total_norm


def loss_fn(params, tokens):
    h = params["embed"][tokens[:, :-1]]
    logp = jax.nn.log_softmax(h @ params["head"], -1)
    return -jnp.take_along_axis(logp, tokens[:, 1:, None], -1).mean()


def train(config: Config):
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("fsdp",))
    model = FSDPModel(config, mesh)
    grad_fn = jax.jit(jax.value_and_grad(loss_fn), out_shardings=(NamedSharding(mesh, P()), model.sharding))
    data_rng = np.random.default_rng(1000 + rank)
    for real_step in range(1, config.total_steps + 1):
        local = data_rng.integers(0, config.vocab, size=(config.per_device_batch, 6))
        batch = jax.make_array_from_process_local_data(NamedSharding(mesh, P("fsdp")), local)
        loss, model.grads = grad_fn(model.params, batch)

        grad_norm = clip_grad_norm_(model.parameters(), config.max_norm)  # gradient clipping

        model.params = jax.tree_util.tree_map(lambda p, g: p - config.lr * g, model.params, model.grads)
        print(f"rank {rank} step {real_step}: loss {float(loss):.4f} grad_norm {grad_norm:.4f}")
    return model, float(loss), grad_norm


def main():
    model, loss, grad_norm = train(Config())
    embed = np.asarray(multihost_utils.process_allgather(model.params["embed"], tiled=True))
    print("RESULT loss", round(loss, 4))
    print("RESULT grad_norm", round(grad_norm, 4))
    print("RESULT embed_norm", round(float(np.linalg.norm(embed)), 4))


if __name__ == "__main__":
    main()

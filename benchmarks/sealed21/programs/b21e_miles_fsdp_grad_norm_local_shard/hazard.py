import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class ShardedNorm:
    """Norm of a sharded gradient: each process holds the partial sum of squares of its own shard."""

    def __init__(self, local_sq):
        self.local_sq = float(local_sq)

    def full_tensor(self):
        total = np.asarray(multihost_utils.process_allgather(np.float32(self.local_sq))).sum()
        return ShardedNorm(total)

    def detach(self):
        return self

    def mean(self):
        return self

    def item(self):
        return float(np.sqrt(self.local_sq))


class FSDPModule:
    def __init__(self, dim_in=6, dim_out=4, seed=0):
        self.rank, self.world = jax.process_index(), jax.process_count()
        rng = np.random.default_rng(seed)
        self.shapes = {"proj.weight": (dim_in, dim_out), "proj.bias": (dim_out,)}
        flat = np.concatenate([0.5 * rng.normal(size=s).ravel() for s in self.shapes.values()]).astype(np.float32)
        self.numel = flat.size
        self.shard_size = -(-self.numel // self.world)
        padded = np.zeros(self.shard_size * self.world, np.float32)
        padded[: self.numel] = flat
        self.local_shard = padded[self.rank * self.shard_size: (self.rank + 1) * self.shard_size]
        self._grad = jax.jit(jax.value_and_grad(self._loss))

    def unshard(self):
        full = np.asarray(multihost_utils.process_allgather(self.local_shard)).reshape(-1)[: self.numel]
        out, off = {}, 0
        for name, shape in self.shapes.items():
            n = int(np.prod(shape))
            out[name] = jnp.asarray(full[off: off + n].reshape(shape))
            off += n
        return out

    def _loss(self, params, x, y):
        pred = jnp.tanh(x @ params["proj.weight"] + params["proj.bias"])
        return jnp.mean((pred - y) ** 2)

    def forward_backward(self, x, y):
        loss, grads = self._grad(self.unshard(), x, y)
        flat = np.concatenate([np.asarray(grads[n]).ravel() for n in self.shapes])
        padded = np.zeros(self.shard_size * self.world, np.float32)
        padded[: self.numel] = flat
        reduced = np.asarray(multihost_utils.process_allgather(padded)).mean(0)
        self.local_grad = reduced[self.rank * self.shard_size: (self.rank + 1) * self.shard_size]
        return float(loss)


def clip_grad_norm_(module, max_norm):
    total_norm = ShardedNorm(np.sum(module.local_grad.astype(np.float64) ** 2))
    full = total_norm.full_tensor().item()
    clip_coef = min(1.0, max_norm / (full + 1e-6))
    module.local_grad = module.local_grad * clip_coef
    return total_norm


def train(steps=5, lr=0.3, max_norm=0.05):
    rank = jax.process_index()
    model = FSDPModule()
    rng = np.random.default_rng(77 + rank)
    w_true = np.random.default_rng(1).normal(size=(6, 4)).astype(np.float32)
    history = []
    for step in range(steps):
        x = rng.normal(size=(16, 6)).astype(np.float32)
        loss = model.forward_backward(x, np.tanh(x @ w_true))
        grad_norm = clip_grad_norm_(model, max_norm)
        model.local_shard = model.local_shard - lr * model.local_grad
        log = {"train/loss": loss, "train/grad_norm": grad_norm.detach().mean().item()}
        history.append(round(log["train/grad_norm"], 5))
        print(f"rank {rank} step {step} loss {loss:.4f} grad_norm {log['train/grad_norm']:.5f}")
    return model, history


def main():
    model, history = train()
    w = np.asarray(multihost_utils.process_allgather(np.asarray(model.unshard()["proj.weight"])))
    print("RESULT train/grad_norm", history)
    print("RESULT weights_sum", round(float(w[0].sum()), 4))
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()

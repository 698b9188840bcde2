# Multi-dataset fine-tuning: every step each data-parallel rank samples which dataset backend
# to draw from (weighted by its `probability`); backends have their own batch sizes.
# Gradients are averaged across ranks and the logged loss is gathered across ranks.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class DataBackend:
    id: str
    train_batch_size: int
    probability: float
    resolution: int = 8


@dataclass
class Args:
    seed: int = 42
    max_train_steps: int = 12
    learning_rate: float = 0.05
    backends: list = field(default_factory=lambda: [
        DataBackend("square-1024", train_batch_size=4, probability=0.5),
        DataBackend("portrait-768", train_batch_size=2, probability=0.5),
    ])


class MultiBackendSampler:
    def __init__(self, backends, seed, rank):
        self.backends = backends
        self.rng = np.random.default_rng(seed + rank)
        self.weights = np.array([b.probability for b in backends]) / sum(b.probability for b in backends)

    def next_batch(self):
        backend = self.backends[self.rng.choice(len(self.backends), p=self.weights)]
        x = self.rng.normal(size=(backend.train_batch_size, backend.resolution)).astype(np.float32)
        noise = self.rng.normal(size=x.shape).astype(np.float32)
        return backend, x, noise


def per_sample_loss(params, x, noise):
    pred = jnp.tanh(x @ params["w1"]) @ params["w2"]
    return jnp.mean((pred - noise) ** 2, axis=1)


def mean_loss(params, x, noise):
    return jnp.mean(per_sample_loss(params, x, noise))


def allreduce_mean(tree):
    return jax.tree_util.tree_map(
        lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0), tree)


def gather_logged_loss(loss, bsz):
    """Average the step loss over every sample processed by every rank."""
    contrib = np.array([float(loss) * bsz, bsz], dtype=np.float32)
    totals = np.asarray(multihost_utils.process_allgather(contrib)).sum(axis=0)
    return float(totals[0] / totals[1])


def main():
    args = Args()
    rank = jax.process_index()
    k1, k2 = jax.random.split(jax.random.PRNGKey(args.seed))
    params = {"w1": jax.random.normal(k1, (8, 16)) * 0.3, "w2": jax.random.normal(k2, (16, 8)) * 0.3}
    sampler = MultiBackendSampler(args.backends, args.seed, rank)
    grad_fn = jax.jit(jax.value_and_grad(mean_loss))
    history = []

    for step in range(args.max_train_steps):
        backend, x, noise = sampler.next_batch()
        loss, grads = grad_fn(params, x, noise)
        grads = allreduce_mean(grads)
        params = jax.tree_util.tree_map(lambda p, g: p - args.learning_rate * g, params, grads)
        avg_loss = gather_logged_loss(loss, backend.train_batch_size)
        history.append(round(avg_loss, 4))
        if rank == 0:
            print(f"step {step} backend={backend.id} train_loss={avg_loss:.4f}")

    print("RESULT steps", args.max_train_steps)
    print("RESULT loss_history", history)


if __name__ == "__main__":
    main()

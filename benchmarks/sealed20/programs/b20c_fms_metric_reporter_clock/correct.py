# Data-parallel language-model pretraining loop with trainer plugins (as in foundation-model-stack):
# gradients are averaged over processes every step and a MetricReporter plugin reports throughput
# and loss, summed over all processes, every `seconds` seconds.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM, SEQ, BATCH = 64, 32, 16, 8


def all_reduce_sum(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x, dtype=np.float32))).sum(axis=0)


class MetricReporter:
    def __init__(self, seconds=0.05, prefix="train"):
        self.seconds = seconds
        self.prefix = prefix
        self.world = jax.process_count()
        self.rank = jax.process_index()
        self.time = time.time()
        self.tokens_seen = 0.0
        self.cum_loss = 0.0
        self.last_reported_step = 0
        self.time_per_step = 1.0
        self.reports = []

    def step(self, step, loss, tokens):
        self.tokens_seen += tokens
        self.cum_loss += loss
        elapsed = time.time() - self.time
        if step == self.last_reported_step:
            return
        steps_taken = step - self.last_reported_step
        if steps_taken * self.time_per_step < self.seconds:
            return
        self.time_per_step = elapsed / steps_taken
        steps = step - self.last_reported_step
        self.last_reported_step = step
        self.time = time.time()

        if self.world > 1:
            self.tokens_seen, self.cum_loss, self.time_per_step = all_reduce_sum(
                [self.tokens_seen, self.cum_loss, self.time_per_step])
            self.time_per_step /= self.world
        avg_loss = self.cum_loss / self.world / steps
        self.reports.append((step, round(float(avg_loss), 4)))
        if self.rank == 0:
            print(f"{self.prefix} step {step}: loss={avg_loss:.4f} tok/stp={self.tokens_seen / steps:,.1f} "
                  f"tok/s={self.tokens_seen / elapsed / self.world:,.1f}")
        self.tokens_seen = 0.0
        self.cum_loss = 0.0


def init_params(key):
    k1, k2 = jax.random.split(key)
    return {"embed": jax.random.normal(k1, (VOCAB, DIM)) * 0.1, "head": jax.random.normal(k2, (DIM, VOCAB)) * 0.1}


def loss_fn(params, tokens):
    h = params["embed"][tokens[:, :-1]]
    logits = h @ params["head"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1))


def batches(rank, steps):
    rng = np.random.default_rng(17 + rank)
    for _ in range(steps):
        start = rng.integers(0, VOCAB, size=(BATCH, 1))
        yield (start + np.arange(SEQ)[None, :] * 3) % VOCAB


def train(steps=300, lr=0.5):
    rank = jax.process_index()
    params = init_params(jax.random.PRNGKey(0))
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    reporter = MetricReporter(seconds=0.05)
    for step, tokens in enumerate(batches(rank, steps), start=1):
        loss, grads = grad_fn(params, tokens)
        grads = jax.tree_util.tree_map(lambda g: all_reduce_sum(g) / jax.process_count(), grads)
        params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        reporter.step(step, float(loss), tokens.size)
    return params, reporter


def main():
    params, reporter = train()
    final = all_reduce_sum(np.array([float(jnp.sum(jnp.abs(p))) for p in jax.tree_util.tree_leaves(params)]))
    print("RESULT params_checksum", round(float(final.sum()), 3))
    print("RESULT num_reports", len(reporter.reports))


if __name__ == "__main__":
    main()

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def hvd_rank():
    return jax.process_index()


def hvd_allreduce(tensors):
    return [np.asarray(multihost_utils.process_allgather(np.asarray(t, np.float32))).mean(0) for t in tensors]


class SGD:
    def __init__(self, learning_rate=0.05):
        self.learning_rate = learning_rate
        self.iterations = 0

    def _aggregate_gradients(self, grads):
        return grads

    def apply_gradients(self, grads, params):
        grads = self._aggregate_gradients(grads)
        self.iterations += 1
        return [p - self.learning_rate * g for p, g in zip(params, grads)]


class DistributedSGD(SGD):
    """hvd.DistributedOptimizer: gradients are allreduced when they are aggregated."""

    def _aggregate_gradients(self, grads):
        return hvd_allreduce(grads)


class LossScaleOptimizer:
    def __init__(self, inner_optimizer, initial_scale=2.0 ** 10, growth_steps=4):
        self.inner_optimizer = inner_optimizer
        self.loss_scale = initial_scale
        self.growth_steps = growth_steps
        self._good_steps = 0

    def get_scaled_loss(self, loss):
        return loss * jnp.float16(self.loss_scale)

    def get_unscaled_gradients(self, grads):
        return [np.asarray(g, np.float32) / self.loss_scale for g in grads]

    def apply_gradients(self, grads, params):
        if all(np.isfinite(g).all() for g in grads):
            params = self.inner_optimizer.apply_gradients(grads, params)
            self._good_steps += 1
            if self._good_steps >= self.growth_steps:
                self.loss_scale, self._good_steps = self.loss_scale * 2, 0
        else:
            self.loss_scale, self._good_steps = self.loss_scale / 2, 0
        return params


class Model:
    def __init__(self, optimizer, features=4):
        self.params = [jnp.zeros((features,), jnp.float16), jnp.zeros((), jnp.float16)]
        self.optimizer = optimizer

        def scaled_loss(params, x, y, scale):
            pred = x @ params[0] + params[1]
            return jnp.mean((pred - y) ** 2) * scale
        self._grad = jax.jit(jax.grad(scaled_loss))

    def train_step(self, x, y):
        scaled = self._grad(self.params, x.astype(jnp.float16), y.astype(jnp.float16),
                            jnp.float16(self.optimizer.loss_scale))
        grads = self.optimizer.get_unscaled_gradients(scaled)
        new = self.optimizer.apply_gradients(grads, [np.asarray(p, np.float32) for p in self.params])
        self.params = [jnp.asarray(p, jnp.float16) for p in new]

    def fit(self, batches):
        for x, y in batches:
            self.train_step(jnp.asarray(x), jnp.asarray(y))


def make_dataset(rank, steps=8, batch=16, features=4):
    rng = np.random.default_rng(7 + rank)
    true_w = np.array([0.5, -1.0, 0.25, 2.0], np.float32)
    batches = []
    for step in range(steps):
        x = rng.normal(size=(batch, features)).astype(np.float32)
        if rank == 1 and step == 3:
            x[0] *= 60.0  # sensor record logged in raw units
        batches.append((x, x @ true_w + 0.1 * rng.normal(size=batch).astype(np.float32)))
    return batches


def main():
    optimizer = LossScaleOptimizer(DistributedSGD(learning_rate=0.05))
    model = Model(optimizer)
    model.fit(make_dataset(hvd_rank()))
    w = np.asarray(multihost_utils.process_allgather(np.asarray(model.params[0], np.float32)))
    print("RESULT weights", [round(float(v), 3) for v in w[0]])
    print("RESULT loss_scale", optimizer.loss_scale)
    print("RESULT applied_steps", optimizer.inner_optimizer.iterations)
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()

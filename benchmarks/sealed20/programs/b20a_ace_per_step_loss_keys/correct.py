# Emulator training with a stochastic rollout-length schedule and inline validation. With
# evaluate_all_steps=False each validation batch is rolled out only for the number of steps the
# train stepper samples for it, and the per-step losses are averaged across ranks for logging.
import os
from dataclasses import dataclass

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class InlineValidationConfig:
    n_batches: int = 3
    evaluate_all_steps: bool = False


@dataclass
class TrainConfig:
    step_schedule: tuple = (1, 2, 4, 12, 20)
    n_train_steps: int = 6
    batch_size: int = 8
    nx: int = 16
    lr: float = 0.05
    seed: int = 1


def reduce_mean(value):
    return float(np.asarray(multihost_utils.process_allgather(np.float32(value))).mean())


class PerStepLossAggregator:
    def __init__(self):
        self._weighted_sums = {}
        self._counts = {}

    def record(self, step_losses):
        for i, loss in enumerate(step_losses):
            key = f"loss_step_{i + 1}"
            self._weighted_sums[key] = self._weighted_sums.get(key, 0.0) + float(loss)
            self._counts[key] = self._counts.get(key, 0) + 1

    def get_logs(self, label, max_steps):
        keys = [f"loss_step_{i + 1}" for i in range(max_steps)]
        sums = np.array([self._weighted_sums.get(k, 0.0) for k in keys], dtype=np.float32)
        counts = np.array([self._counts.get(k, 0) for k in keys], dtype=np.float32)
        totals = np.asarray(multihost_utils.process_allgather(np.stack([sums, counts]))).sum(axis=0)
        return {f"{label}/{k}": float(totals[0, i] / totals[1, i]) for i, k in enumerate(keys) if totals[1, i] > 0}


def init_params(key, nx):
    return {"w": jnp.eye(nx) * 0.9 + jax.random.normal(key, (nx, nx)) * 0.01, "b": jnp.zeros(nx)}


def rollout(params, x0, n_steps):
    def step(x, _):
        x = jnp.tanh(x @ params["w"] + params["b"])
        return x, x
    _, xs = jax.lax.scan(step, x0, None, length=n_steps)
    return xs


def step_losses(params, x0, target, n_steps):
    preds = rollout(params, x0, n_steps)
    return jnp.mean((preds - target[:n_steps]) ** 2, axis=(1, 2))


def make_batch(rng, cfg, n_steps):
    x0 = rng.normal(size=(cfg.batch_size, cfg.nx)).astype(np.float32)
    shifts = [np.roll(x0, s + 1, axis=1) * 0.8 ** (s + 1) for s in range(n_steps)]
    return x0, np.stack(shifts).astype(np.float32)


def train(params, cfg, rng):
    for _ in range(cfg.n_train_steps):
        n_steps = int(rng.choice(cfg.step_schedule))
        x0, target = make_batch(rng, cfg, n_steps)
        grads = jax.grad(lambda p: jnp.mean(step_losses(p, x0, target, n_steps)))(params)
        flat, unravel = jax.flatten_util.ravel_pytree(grads)
        mean = np.asarray(multihost_utils.process_allgather(np.asarray(flat))).mean(axis=0)
        params = jax.tree_util.tree_map(lambda p, g: p - cfg.lr * g, params, unravel(jnp.asarray(mean)))
    return params


def inline_validation(params, cfg, val_cfg, rng):
    aggregator = PerStepLossAggregator()
    max_steps = max(cfg.step_schedule)
    for _ in range(val_cfg.n_batches):
        n_steps = max_steps if val_cfg.evaluate_all_steps else int(rng.choice(cfg.step_schedule))
        x0, target = make_batch(rng, cfg, n_steps)
        aggregator.record(np.asarray(step_losses(params, x0, target, n_steps)))
    return aggregator.get_logs("val", max_steps)


def main():
    cfg, val_cfg = TrainConfig(), InlineValidationConfig()
    rng = np.random.default_rng(cfg.seed + jax.process_index())
    params = init_params(jax.random.PRNGKey(cfg.seed), cfg.nx)
    params = train(params, cfg, rng)
    logs = inline_validation(params, cfg, val_cfg, rng)
    print("RESULT val/loss_step_1", round(logs["val/loss_step_1"], 5))
    print("RESULT logged_keys", len(logs))
    print("RESULT w_trace", round(float(jnp.trace(params["w"])), 4))


if __name__ == "__main__":
    main()

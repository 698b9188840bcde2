import os
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Config:
    seed: int = 1234
    target_acc: float = 0.80
    max_epoch: int = 6
    eval_interval_steps: int = 4
    lr: float = 0.5
    dropout: float = 0.3
    hidden: int = 16


class TrainingState:
    def __init__(self):
        self.global_steps = 0
        self.eval_acc = 0.0
        self.converged = False
        self.end_training = False


def build_dataset(n=256, features=8):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w = rng.normal(size=(features,)).astype(np.float32)
    y = (x @ w + 0.3 * rng.normal(size=n) > 0).astype(np.int32)
    return (x[:192], y[:192]), (x[192:], y[192:])


def init_params(key, features, hidden):
    k1, k2 = jax.random.split(key)
    return {"w1": 0.3 * jax.random.normal(k1, (features, hidden)), "b1": jnp.zeros(hidden),
            "w2": 0.3 * jax.random.normal(k2, (hidden, 2)), "b2": jnp.zeros(2)}


def forward(params, x, key, rate):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    keep = jax.random.bernoulli(key, 1.0 - rate, h.shape)
    h = jnp.where(keep, h / (1.0 - rate), 0.0)
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y, key, rate):
    logits = forward(params, x, key, rate)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


class Trainer:
    def __init__(self, config, params):
        self.config = config
        self.params = params
        self._grad = jax.jit(jax.grad(loss_fn), static_argnums=4)
        self._logits = jax.jit(forward, static_argnums=3)

    def train_one_step(self, x, y, key):
        grads = self._grad(self.params, x, y, key, self.config.dropout)
        grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(v))).mean(0) for k, v in grads.items()}
        self.params = {k: self.params[k] - self.config.lr * grads[k] for k in self.params}

    def evaluate(self, eval_data, key):
        x, y = eval_data
        logits = self._logits(self.params, x, key, self.config.dropout)
        return float(np.mean(np.asarray(jnp.argmax(logits, -1)) == y))


def main():
    config = Config()
    rank, world = jax.process_index(), jax.process_count()
    key = jax.random.PRNGKey(config.seed + rank)
    (x_train, y_train), eval_data = build_dataset()
    params = init_params(jax.random.PRNGKey(config.seed), x_train.shape[1], config.hidden)
    trainer = Trainer(config, params)
    state = TrainingState()
    shard = np.arange(rank, len(x_train), world)
    batches = [shard[i:i + 16] for i in range(0, len(shard), 16)]
    start = time.time()
    for epoch in range(config.max_epoch):
        for idx in batches:
            key, step_key, eval_key = jax.random.split(key, 3)
            trainer.train_one_step(x_train[idx], y_train[idx], step_key)
            state.global_steps += 1
            if state.global_steps % config.eval_interval_steps == 0:
                state.eval_acc = trainer.evaluate(eval_data, eval_key)
                print(f"rank {rank} step {state.global_steps} eval_acc {state.eval_acc:.4f}")
                if state.eval_acc >= config.target_acc:
                    state.converged = True
                    state.end_training = True
            if state.end_training:
                break
        if state.end_training:
            break
    print(f"rank {rank}: training finished in {time.time() - start:.1f}s")
    steps = np.asarray(multihost_utils.process_allgather(np.int32(state.global_steps)))
    w2 = np.asarray(multihost_utils.process_allgather(np.asarray(trainer.params["w2"])))
    print("RESULT converged", state.converged)
    print("RESULT global_steps", steps.tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w2, w2[0])))


if __name__ == "__main__":
    main()

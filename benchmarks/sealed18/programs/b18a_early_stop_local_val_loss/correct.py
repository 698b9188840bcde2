# Data-parallel regression fine-tuning with early stopping; the stop decision is OR-reduced across processes
# Source: https://github.com/huggingface/accelerate/pull/1940
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
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
class TrainConfig:
    features: int = 8
    per_process_batch: int = 16
    max_steps: int = 60
    eval_every: int = 5
    patience: int = 2
    lr: float = 0.05


class EarlyStopping:
    def __init__(self, patience):
        self.patience = patience
        self.best = float("inf")
        self.bad_evals = 0

    def should_stop(self, val_loss):
        if val_loss < self.best - 1e-4:
            self.best, self.bad_evals = val_loss, 0
        else:
            self.bad_evals += 1
        return self.bad_evals >= self.patience


def make_splits(cfg, process_index):
    rng = np.random.default_rng(1234)
    w_true = rng.normal(size=(cfg.features,)).astype(np.float32)
    x_train = rng.normal(size=(cfg.max_steps, 2, cfg.per_process_batch, cfg.features)).astype(np.float32)
    y_train = x_train @ w_true
    # each process validates on the slice of the held-out domains assigned to it
    domain_shift = np.linspace(0.0, 1.5, jax.process_count())[process_index]
    x_val = rng.normal(size=(64, cfg.features)).astype(np.float32)
    y_val = x_val @ (w_true * (1.0 - domain_shift))
    return x_train[:, process_index], y_train[:, process_index], x_val, y_val


def loss_fn(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def main():
    cfg = TrainConfig()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch_sharding = NamedSharding(mesh, P("data"))
    replicated = NamedSharding(mesh, P())
    x_train, y_train, x_val, y_val = make_splits(cfg, jax.process_index())

    @jax.jit
    def train_step(w, x, y):
        loss, grad = jax.value_and_grad(loss_fn)(w, x, y)
        return w - cfg.lr * grad, loss

    eval_loss = jax.jit(loss_fn)
    w = jax.device_put(np.zeros((cfg.features,), np.float32), replicated)
    stopper = EarlyStopping(cfg.patience)
    step = 0
    for step in range(cfg.max_steps):
        x = jax.make_array_from_process_local_data(batch_sharding, x_train[step])
        y = jax.make_array_from_process_local_data(batch_sharding, y_train[step])
        w, loss = train_step(w, x, y)
        if (step + 1) % cfg.eval_every == 0:
            w_local = np.asarray(w.addressable_shards[0].data)
            val_loss = float(eval_loss(w_local, x_val, y_val))
            stop = stopper.should_stop(val_loss)
            # every process must agree before leaving the loop (set_breakpoint / check_breakpoint)
            if bool(multihost_utils.process_allgather(np.array(stop)).any()):
                break
    w_final = np.asarray(w.addressable_shards[0].data)
    print("RESULT stopped_at", step + 1)
    print("RESULT weights", np.round(w_final, 3).tolist())


if __name__ == "__main__":
    main()

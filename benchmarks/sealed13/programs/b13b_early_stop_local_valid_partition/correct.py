# Distributed boosting-style training: each worker's early-stopping callback watches the metric aggregated over all validation partitions
# Source: https://github.com/lightgbm-org/LightGBM/issues/6351
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEAT, N_TRAIN, N_VALID, NUM_ROUNDS, LR, STOPPING_ROUNDS = 4, 32, 16, 60, 0.05, 5
MESH = Mesh(np.array(jax.devices()), ("data",))


class EarlyStopException(Exception):
    def __init__(self, best_iteration, best_score):
        super().__init__(best_iteration)
        self.best_iteration, self.best_score = best_iteration, best_score


class EarlyStopping:
    """Stop when the validation metric has not improved for `stopping_rounds` rounds."""

    def __init__(self, stopping_rounds):
        self.stopping_rounds, self.best_score, self.best_iter = stopping_rounds, np.inf, 0

    def __call__(self, iteration, score):
        if score < self.best_score:
            self.best_score, self.best_iter = score, iteration
        elif iteration - self.best_iter >= self.stopping_rounds:
            raise EarlyStopException(self.best_iter, self.best_score)


def load_partitions(rank):
    """Row partitions of the train and validation frames held by this worker."""
    rng = np.random.default_rng(rank)
    xt = rng.normal(size=(N_TRAIN, FEAT)).astype(np.float32)
    yt = (xt[:, 0] + 0.8 * xt[:, 1]).astype(np.float32)
    xv = rng.normal(size=(N_VALID, FEAT)).astype(np.float32)
    drift = 0.8 if rank == 0 else -0.8  # the later validation partition comes from a shifted period
    yv = (xv[:, 0] + drift * xv[:, 1]).astype(np.float32)
    return (xt, yt), (xv, yv)


@jax.jit
def boost_round(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * g, loss


def eval_valid(w, xv, yv):
    err = xv @ np.asarray(w) - yv
    return float(np.sum(err ** 2)), float(len(yv))


def valid_metric(w, xv, yv):
    sq, n = eval_valid(w, xv, yv)
    sq, n = np.asarray(multihost_utils.process_allgather(np.array([sq, n], np.float64))).reshape(-1, 2).sum(axis=0)
    return sq / n


def train():
    (xt, yt), (xv, yv) = load_partitions(jax.process_index())
    sharding = NamedSharding(MESH, P("data"))
    x = jax.make_array_from_process_local_data(sharding, xt)
    y = jax.make_array_from_process_local_data(sharding, yt)
    w = jnp.zeros((FEAT,), jnp.float32)
    callback = EarlyStopping(STOPPING_ROUNDS)
    best_iteration = NUM_ROUNDS - 1
    for it in range(NUM_ROUNDS):
        w, train_loss = boost_round(w, x, y)
        try:
            callback(it, valid_metric(w, xv, yv))
        except EarlyStopException as e:
            best_iteration = e.best_iteration
            break
    multihost_utils.sync_global_devices("training_finished")
    return w, train_loss, best_iteration


w, train_loss, best_iteration = train()
print("RESULT best_iteration", best_iteration)
print("RESULT train_loss", round(float(train_loss), 5))
print("RESULT w", np.round(np.asarray(w), 4).tolist())

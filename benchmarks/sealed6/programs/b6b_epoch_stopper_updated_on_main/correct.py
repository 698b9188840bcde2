# Early stopping epoch counter: on_stage_end runs on every process with the loss averaged over
# all processes, so every epoch iterator stops together (fixed)
# Source: https://github.com/speechbrain/speechbrain/issues/1939 (port of the SpeechBrain DDP early-stopping hang to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
from enum import Enum

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
DATA = NamedSharding(MESH, P("data"))


class Stage(Enum):
    TRAIN = 1
    VALID = 2


def if_main_process():
    return jax.process_index() == 0


def run_on_main(func, *args):
    if if_main_process():
        func(*args)


class EpochCounterWithStopper:
    def __init__(self, limit, limit_to_stop, limit_warmup=0):
        self.current, self.limit = 0, limit
        self.limit_to_stop, self.limit_warmup = limit_to_stop, limit_warmup
        self.best, self.best_epoch, self.should_stop = float("inf"), 0, False

    def __iter__(self):
        return self

    def __next__(self):
        if self.current < self.limit and not self.should_stop:
            self.current += 1
            return self.current
        raise StopIteration

    def update_metric(self, value):
        if value < self.best:
            self.best, self.best_epoch = value, self.current
        elif self.current > self.limit_warmup and self.current - self.best_epoch >= self.limit_to_stop:
            self.should_stop = True


@jax.jit
def train_step(w, x, y):
    grads = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.05 * grads


@jax.jit
def eval_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def local_batch(split, epoch, step):
    rng = np.random.default_rng(1000 * (split == "valid") + 10 * epoch + step + 7 * jax.process_index())
    x = rng.normal(size=(8, 4)).astype(np.float32)
    slope = np.array([2.0, -1.0, 0.5, 1.0], np.float32) if split == "train" else np.array([-1.0, 1.5, 0.5, -2.0], np.float32)
    return x, (x @ slope).astype(np.float32)


class Brain:
    def __init__(self, epoch_counter):
        self.epoch_counter = epoch_counter
        self.w = jax.device_put(jnp.zeros(4), NamedSharding(MESH, P()))
        self.history = []

    def fit_batch(self, x, y):
        gx = jax.make_array_from_process_local_data(DATA, x)
        gy = jax.make_array_from_process_local_data(DATA, y)
        self.w = train_step(self.w, gx, gy)

    def on_stage_end(self, stage, stage_loss, epoch):
        if stage == Stage.VALID:
            self.epoch_counter.update_metric(stage_loss)
            self.history.append((epoch, round(stage_loss, 4)))

    def _fit_valid(self, epoch):
        w_local = np.asarray(self.w.addressable_data(0))
        losses = [float(eval_loss(w_local, *local_batch("valid", epoch, s))) for s in range(2)]
        avg_valid_loss = float(np.mean(multihost_utils.process_allgather(np.float32(np.mean(losses)))))
        # run "on_stage_end" on all processes; only saving would be restricted to the main one
        self.on_stage_end(Stage.VALID, avg_valid_loss, epoch)

    def fit(self):
        for epoch in self.epoch_counter:
            for step in range(3):
                self.fit_batch(*local_batch("train", epoch, step))
            self._fit_valid(epoch)


brain = Brain(EpochCounterWithStopper(limit=8, limit_to_stop=1))
brain.fit()
final = multihost_utils.process_allgather(np.asarray(brain.w.addressable_data(0)))
print("RESULT epochs run", brain.epoch_counter.current, flush=True)
print("RESULT w", np.round(np.asarray(final)[0], 3).tolist(), flush=True)

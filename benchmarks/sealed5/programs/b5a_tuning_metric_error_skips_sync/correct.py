# The tuning early-stopping callback updates metrics on the main host inside try/finally, so the
# barrier after evaluation is reached on every host even when a NaN reward raises on the main host.
# Source: https://github.com/google/paxml/commit/933177c558310ccfd17e03362676dea6fcfd156e
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import contextlib
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())


class Trial:
    def __init__(self, trial_id):
        self.id, self.status, self.measurements = trial_id, "ACTIVE", []


class Feedback:
    def __init__(self, trial_id):
        self._trial = Trial(trial_id)
        self.id = trial_id

    def get_trial(self):
        return self._trial

    def add_measurement(self, reward, step):
        self._trial.measurements.append((step, reward))

    def skip(self, reason="Unknown."):
        self._trial.status = "SKIPPED"

    def should_stop_early(self):
        return False

    @contextlib.contextmanager
    def skip_on_exceptions(self, exceptions):
        try:
            yield
        except tuple(exceptions) as e:
            self.skip(repr(e))


class EarlyStoppingFn:
    def __init__(self, feedback, reward_fn):
        self._feedback, self._reward_fn = feedback, reward_fn

    def __call__(self, metrics, has_eval, global_step, is_last_ckpt):
        if has_eval:
            try:
                # We only handle metric updates on main host.
                if jax.process_index() == 0:
                    self._update_metrics(metrics, global_step)
            finally:
                multihost_utils.sync_global_devices(
                    f"Sync on trial {self._feedback.id} after evaluation at tuning step {global_step}.")
        should_stop = self._feedback.get_trial().status == "COMPLETED" or self._feedback.should_stop_early()
        if should_stop:
            multihost_utils.sync_global_devices(f"Sync on trial {self._feedback.id} upon completion.")
        return should_stop

    def _update_metrics(self, metrics, tuning_step):
        reward = self._reward_fn(metrics)
        if math.isnan(reward):
            raise FloatingPointError("Reward is NaN.")
        self._feedback.add_measurement(reward, tuning_step)


@jax.jit
def train_step(w, x, lr):
    return w - lr * jax.grad(lambda w: jnp.mean((x @ w - 1.0) ** 2))(w)


@jax.jit
def eval_step(w, x, weights):
    per_example = (x @ w - 1.0) ** 2
    return jnp.sum(per_example * weights) / jnp.sum(weights)


def trial_fn(learning_rate, early_stopping_fn, num_steps=12, eval_every=12):
    w = jax.device_put(jnp.ones((4,)), REPL)
    rng = np.random.default_rng(1000 + jax.process_index())
    for step in range(1, num_steps + 1):
        x = jax.make_array_from_process_local_data(DATA, rng.normal(size=(4, 4)).astype(np.float32))
        w = train_step(w, x, learning_rate)
        if step % eval_every == 0:
            ex = jax.make_array_from_process_local_data(DATA, np.ones((2, 4), np.float32))
            weights = jax.make_array_from_process_local_data(DATA, np.array([1.0, 0.0], np.float32))  # padded
            metrics = {"eval/loss": float(eval_step(w, ex, weights))}
            if early_stopping_fn(metrics, True, step, step == num_steps):
                break
    return w


def tune(learning_rates):
    finals = []
    for trial_id, lr in enumerate(learning_rates):
        feedback = Feedback(trial_id)
        early_stopping_fn = EarlyStoppingFn(feedback, reward_fn=lambda m: -m["eval/loss"])
        with feedback.skip_on_exceptions([FloatingPointError]):
            w = trial_fn(lr, early_stopping_fn)
            finals.append((trial_id, round(float(jnp.sum(w)), 4)))
    return finals


print("RESULT", tune([80.0, 0.05, 0.1])[-1])

# When the early-stopping policy stops a trial, every host raises EarlyStoppingError, but the handler
# runs the "early stopping started/completed" barriers only inside `if jax.process_index() == 0`.
# Source: https://github.com/google/paxml/commit/99682e34e6c70d315fde55fe01188d31cd3db44c
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import contextlib
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


class EarlyStoppingError(Exception):
    def __init__(self, skip, skip_reason=None, step=None):
        super().__init__(skip_reason)
        self.skip, self.skip_reason, self.step = skip, skip_reason, step


class ThresholdStoppingPolicy:
    """Stops a trial whose evaluation loss is above a threshold (same eval metrics on every host)."""

    def __init__(self, max_eval_loss):
        self.max_eval_loss = max_eval_loss

    def should_stop(self, metrics):
        return metrics is not None and metrics["eval/loss"] > self.max_eval_loss


class Feedback:
    def __init__(self, trial_id, policy):
        self.id, self._policy = trial_id, policy
        self.status, self.measurements, self._last_metrics = "ACTIVE", [], None

    def observe(self, metrics):
        self._last_metrics = metrics

    def add_measurement(self, reward, step):
        self.measurements.append((step, reward))

    def should_stop_early(self):
        return self._policy.should_stop(self._last_metrics)

    def skip(self, reason):
        self.status = "SKIPPED"

    @contextlib.contextmanager
    def skip_on_exceptions(self, exceptions):
        try:
            yield
        except tuple(exceptions) as e:
            self.skip(repr(e))


def _get_early_stopping_fn(feedback):
    def should_stop_early(metrics, has_eval, global_step):
        if has_eval:
            feedback.observe(metrics)
            if jax.process_index() == 0:
                feedback.add_measurement(-metrics["eval/loss"], global_step)
        if feedback.should_stop_early():
            raise EarlyStoppingError(skip=True, skip_reason="Stopped by early stopping policy.", step=global_step)
        return False
    return should_stop_early


@jax.jit
def train_step(w, x, lr):
    return w - lr * jax.grad(lambda w: jnp.mean((x @ w - 1.0) ** 2))(w)


@jax.jit
def eval_step(w, x):
    return jnp.mean((x @ w - 1.0) ** 2)


def trial_fn(learning_rate, early_stopping_fn, num_steps=6, eval_every=2):
    w = jax.device_put(jnp.zeros((4,)), REPL)
    rng = np.random.default_rng(500 + jax.process_index())
    for step in range(1, num_steps + 1):
        w = train_step(w, jax.make_array_from_process_local_data(DATA, rng.normal(size=(4, 4)).astype(np.float32)),
                       learning_rate)
        if step % eval_every == 0:
            ex = jax.make_array_from_process_local_data(DATA, np.full((2, 4), 0.25, np.float32))
            early_stopping_fn({"eval/loss": float(eval_step(w, ex))}, True, step)
    return w


def tune(learning_rates, policy):
    results = []
    for trial_id, lr in enumerate(learning_rates):
        feedback = Feedback(trial_id, policy)
        with feedback.skip_on_exceptions([FloatingPointError]):
            try:
                w = trial_fn(lr, _get_early_stopping_fn(feedback))
                results.append((trial_id, round(float(jnp.sum(w)), 4)))
            except EarlyStoppingError as e:
                if jax.process_index() == 0:
                    if e.skip:
                        multihost_utils.sync_global_devices(f"Sync on trial {feedback.id} early stopping started.")
                        feedback.skip(e.skip_reason or "Unknown.")
                        multihost_utils.sync_global_devices(f"Sync on trial {feedback.id} early stopping completed.")
    return results


print("RESULT", tune([3.0, 0.05, 0.1], ThresholdStoppingPolicy(max_eval_loss=5.0)))

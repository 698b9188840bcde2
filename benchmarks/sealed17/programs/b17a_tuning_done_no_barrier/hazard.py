# Tuning trial: process 0 marks the trial done on the tuning service, other processes query should_stop_early() without waiting
# Source: https://github.com/google/paxml/commit/5434fed6a3b37737f81aa7df800397f2c3a783bd
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import json
import os
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DIM, STEPS, EVAL_EVERY = 8, 6, 3


class TrialFeedback:
    """Client of the tuning service; the trial state lives in the service (a shared file here)."""

    def __init__(self, path):
        self.path = path

    def _commit(self, state):
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.path)

    def _state(self):
        return json.loads(self.path.read_text()) if self.path.exists() else {"done": False, "measurements": []}

    def add_measurement(self, reward, step):
        state = self._state()
        time.sleep(0.5)  # RPC round trip to the tuning service
        state["measurements"].append([step, reward])
        self._commit(state)

    def done(self):
        state = self._state()
        state["done"] = True
        self._commit(state)

    def should_stop_early(self):
        return bool(self._state()["done"])


def make_early_stopping_fn(feedback):
    def early_stopping_fn(metrics, global_step, is_last_checkpoint):
        if jax.process_index() == 0:
            if metrics is not None:
                feedback.add_measurement(-metrics["eval_loss"], global_step)
            if is_last_checkpoint:
                feedback.done()
        return feedback.should_stop_early()
    return early_stopping_fn


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda p: jnp.mean((x @ p - y) ** 2))(w)
    return w - 0.05 * g, loss


def main():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch = NamedSharding(mesh, P("data"))
    trial_dir = Path(tempfile.gettempdir()) / "mcjax_sealed17_tuning_done_no_barrier" / os.environ.get("JOB_ID", "0")
    trial_dir.mkdir(parents=True, exist_ok=True)
    early_stopping_fn = make_early_stopping_fn(TrialFeedback(trial_dir / "trial.json"))
    w = jax.device_put(jnp.zeros((DIM,), jnp.float32), NamedSharding(mesh, P()))
    rng = np.random.default_rng(rank)
    step, stopped = 0, False
    while not stopped:
        x = jax.make_array_from_process_local_data(batch, rng.normal(size=(4, DIM)).astype(np.float32))
        y = jax.make_array_from_process_local_data(batch, np.ones((4,), np.float32))
        w, loss = train_step(w, x, y)
        step += 1
        if step % EVAL_EVERY == 0:
            metrics = {"eval_loss": float(loss.addressable_shards[0].data)}
            stopped = early_stopping_fn(metrics, step, is_last_checkpoint=step >= STEPS)
    print("RESULT stopped_at", step)
    print("RESULT w_sum", round(float(jnp.sum(w).addressable_shards[0].data), 5))


if __name__ == "__main__":
    main()

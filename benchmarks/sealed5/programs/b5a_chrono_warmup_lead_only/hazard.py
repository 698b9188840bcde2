# The train-summary condition reads chrono.warmup on every host, but only the lead host calls
# chrono.tick(), so on the other hosts warmup never decreases and the condition is always true.
# Source: https://github.com/google-research/scenic/commit/2e7209cec978a2011f7f87973b2c596f3625dd6f
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("batch",))
DATA = NamedSharding(MESH, P("batch"))
REPL = NamedSharding(MESH, P())


class Chrono:
    """Measures throughput; the first `warmup` ticks are skipped (compilation)."""

    def __init__(self, first_step, total_steps):
        self.first_step, self.total_steps = first_step, total_steps
        self.warmup = 2
        self.accum_pause_time = 0.0
        self.pause_start = None
        self.prev_time, self.prev_step = time.time(), first_step

    def tick(self, step, writer, write_note):
        now = time.time()
        if self.warmup > 0:
            self.warmup -= 1
            write_note(f"chrono warmup tick at step {step}")
        else:
            writer.append(("steps_per_sec", (step - self.prev_step) / max(now - self.prev_time, 1e-9)))
        self.prev_time, self.prev_step = now, step

    def pause(self, wait_for=()):
        jax.block_until_ready(wait_for)
        self.pause_start = time.time()

    def resume(self):
        self.accum_pause_time += time.time() - self.pause_start


def log_train_summary(step, train_metrics, writer):
    summary = {"loss": float(np.mean([m["loss"] for m in train_metrics]))}
    writer.append((f"train/{step}", summary))
    return summary


@jax.jit
def train_step(params, batch):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((batch @ p - 0.5) ** 2))(params)
    return params - 0.1 * grads, {"loss": loss}


def train(total_steps=14, log_summary_steps=5):
    lead_host = jax.process_index() == 0
    writer, notes = [], []
    params = jax.device_put(jnp.ones((3,)), REPL)
    rng = np.random.default_rng(jax.process_index())
    chrono = Chrono(first_step=0, total_steps=total_steps)
    train_metrics, train_summary = [], None
    for step in range(1, total_steps + 1):
        batch = jax.make_array_from_process_local_data(DATA, rng.normal(size=(4, 3)).astype(np.float32))
        params, metrics = train_step(params, batch)
        train_metrics.append(jax.device_get(metrics))
        ###################### LOG TRAIN SUMMARY ########################
        if (step % log_summary_steps == 1) or (step == total_steps) or chrono.warmup:
            chrono.pause(wait_for=params)
            if lead_host:
                chrono.tick(step, writer, notes.append)
            train_summary = log_train_summary(step, train_metrics, writer)
            train_metrics = []
            chrono.resume()
    return params, train_summary


params, summary = train()
print("RESULT", round(summary["loss"], 5), round(float(jnp.sum(params)), 5))

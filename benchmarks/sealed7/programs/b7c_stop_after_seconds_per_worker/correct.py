# Trainer callback that stops a fine-tuning measurement after `stop_after_seconds` of wall-clock time
# Source: https://github.com/IBM/ado/pull/41 (port of the sfttrainer wrapper's early-stop callback to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import dataclasses
import json
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class MeasurementConfig:
    stop_after_seconds: float = 2.0
    max_steps: int = 40
    batch_per_process: int = 8
    hidden: int = 16
    lr: float = 0.05


@dataclasses.dataclass
class TrainerControl:
    should_training_stop: bool = False


class StopAfterSecondsCallback:
    """Ends the measurement once the wall-clock budget of this worker is spent."""

    def __init__(self, cfg: MeasurementConfig):
        self.cfg = cfg
        self.train_start = None

    def on_train_begin(self, control: TrainerControl):
        self.train_start = time.monotonic()

    def on_step_end(self, step: int, control: TrainerControl):
        elapsed = time.monotonic() - self.train_start
        local_stop = np.array([elapsed > self.cfg.stop_after_seconds], np.int32)
        # every worker must leave the loop at the same step: stop as soon as any worker's budget is spent
        if multihost_utils.process_allgather(local_stop).max() > 0:
            control.should_training_stop = True


class Trainer:
    def __init__(self, cfg: MeasurementConfig, callbacks):
        self.cfg, self.callbacks = cfg, callbacks
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
        self.w = jnp.asarray(np.random.default_rng(0).normal(size=(cfg.hidden,)).astype(np.float32))
        self.rng = np.random.default_rng(100 + jax.process_index())
        self._step = jax.jit(self._grad_step, out_shardings=NamedSharding(self.mesh, P()))
        self._step(self.w, self._next_batch())   # warm-up: compile before the measurement starts

    @staticmethod
    def _grad_step(w, x):
        loss = lambda w: jnp.mean((x @ w - 1.0) ** 2)
        return jax.value_and_grad(loss)(w)

    def _next_batch(self):
        time.sleep(0.08)  # tokenised shard read from the shared filesystem
        local = self.rng.normal(size=(self.cfg.batch_per_process, self.cfg.hidden)).astype(np.float32)
        return jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("dp")), local)

    def _write_run_manifest(self):
        # the main process records the measurement configuration before training starts
        path = os.path.join(tempfile.gettempdir(), f"ado_manifest_{os.environ.get('JOB_ID', 'local')}.json")
        with open(path, "w") as f:
            json.dump(dataclasses.asdict(self.cfg), f)
        time.sleep(1.5)  # upload of the manifest to the results store

    def train(self):
        control = TrainerControl()
        if jax.process_index() == 0:
            self._write_run_manifest()
        for cb in self.callbacks:
            cb.on_train_begin(control)
        step, loss = 0, None
        while step < self.cfg.max_steps and not control.should_training_stop:
            loss, grad = self._step(self.w, self._next_batch())
            self.w = self.w - self.cfg.lr * grad
            step += 1
            for cb in self.callbacks:
                cb.on_step_end(step, control)
        return step, float(loss)


def main():
    cfg = MeasurementConfig()
    trainer = Trainer(cfg, [StopAfterSecondsCallback(cfg)])
    steps, loss = trainer.train()
    print("RESULT steps", steps)
    print("RESULT loss", round(loss, 5))


if __name__ == "__main__":
    main()

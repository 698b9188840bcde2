# MetricsManager summarizes host copies of the metrics in its background thread: no device computation there
# Source: https://github.com/google-research/t5x/commit/cd56022980634f0dc115266696b8e92047c9b897
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import concurrent.futures
import dataclasses
import os
import time
from typing import Callable, Dict, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
PER_DEVICE = NamedSharding(MESH, P("data"))


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Average:
    """Per-device partial sums; compute() reduces them across all devices."""
    total: jax.Array
    count: jax.Array

    def merge(self, other: "Average") -> "Average":
        return Average(self.total + other.total, self.count + other.count)

    def compute(self):
        return jnp.sum(self.total) / jnp.sum(self.count)

    def to_host(self) -> "HostAverage":
        # every process takes part: the partial sums live on all devices
        return HostAverage(multihost_utils.process_allgather(self.total, tiled=True),
                           multihost_utils.process_allgather(self.count, tiled=True))


@dataclasses.dataclass
class HostAverage:
    total: np.ndarray
    count: np.ndarray

    def compute(self):
        return np.sum(self.total) / np.sum(self.count)


class MetricsManager:
    def __init__(self, summarize_fn: Callable[..., Mapping[str, float]]):
        self._summarize_fn = summarize_fn
        self.written: Dict[int, Mapping[str, float]] = {}

    def write_metrics_summary(self, metrics: Mapping[str, Average], step: int, duration: float, num_steps: int):
        if jax.process_index() == 0:
            summary = self._summarize_fn(metrics=metrics, duration=duration, num_steps=num_steps)
            self.written[step] = summary
        return metrics


def summarize_metrics_fn(metrics: Mapping[str, Average], duration: float, num_steps: int) -> Mapping[str, float]:
    """Convert metrics into tensorboard-friendly summary."""
    # Ensure that there are no device computations since this may be called from a separate thread.
    metrics = {k: v.compute() for k, v in metrics.items()}
    summary = {k: round(float(v), 4) for k, v in metrics.items()}
    summary["timing/steps_per_second"] = num_steps / duration
    return summary


@jax.jit
def train_step(params, batch):
    loss_per_device = jnp.mean(jnp.square(params - batch), axis=1)
    new_params = params - 0.1 * (params - jnp.mean(batch))
    return new_params, Average(loss_per_device, jnp.ones_like(loss_per_device))


class Trainer:
    def __init__(self, params):
        self.params = params
        self.train_metrics_manager = MetricsManager(summarize_metrics_fn)
        self._metrics_executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def train(self, batch_iter, num_steps: int, start_step: int) -> concurrent.futures.Future:
        tick = time.time()
        metrics = None
        for _ in range(num_steps):
            self.params, step_metrics = train_step(self.params, next(batch_iter))
            metrics = {"loss": step_metrics if metrics is None else metrics["loss"].merge(step_metrics)}

        # Copy to host to avoid device computations in the separate thread.
        final_metrics = {k: v.to_host() for k, v in metrics.items()}

        def _write_summary():
            tock = time.time()
            return self.train_metrics_manager.write_metrics_summary(
                final_metrics, start_step + num_steps, tock - tick, num_steps)

        return self._metrics_executor.submit(_write_summary)


def batches():
    rng = np.random.default_rng(jax.process_index())
    while True:
        yield jax.make_array_from_process_local_data(PER_DEVICE, rng.normal(size=(1, 8)).astype(np.float32))


trainer = Trainer(jax.make_array_from_process_local_data(PER_DEVICE, np.zeros((1, 8), np.float32)))
batch_iter = batches()
futures = [trainer.train(batch_iter, num_steps=3, start_step=3 * i) for i in range(4)]
for f in futures:
    f.result()
params = multihost_utils.process_allgather(trainer.params, tiled=True)
print("RESULT params", round(float(np.sum(params)), 4))

# Per-channel loss aggregator that all-reduces one channel at a time, walking channel names whose order comes from a set
# Source: https://github.com/ai2cm/ace/pull/1466
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


@dataclass
class StepperConfig:
    in_names: list = field(default_factory=lambda: [
        "air_temperature_0", "air_temperature_1", "surface_pressure", "specific_total_water_0",
        "eastward_wind_0", "northward_wind_0", "PRATEsfc", "TMP2m"])
    out_names: list = field(default_factory=lambda: [
        "air_temperature_0", "air_temperature_1", "surface_pressure", "specific_total_water_0",
        "eastward_wind_0", "northward_wind_0", "PRATEsfc", "TMP2m"])
    batch_per_process: int = 4
    n_steps: int = 3

    @property
    def output_names(self):
        return list(set(self.out_names))          # order follows this interpreter's string hashing

    def channel_index(self, name):
        return self.out_names.index(name)


@jax.jit
def forward(w, x):
    return jax.lax.with_sharding_constraint(jnp.tanh(x @ w), ROWS)


@jax.jit
def _global_mean(v):
    return jnp.mean(v)


def reduce_mean(value):
    """Mean of one scalar over all processes (an all-reduce matched by call position)."""
    g = jax.make_array_from_process_local_data(ROWS, np.array([value], np.float32))
    return float(_global_mean(g))


class PerChannelLossAggregator:
    def __init__(self):
        self._weighted_sums = {}
        self._n = 0

    def record(self, per_channel):
        for name, v in per_channel.items():
            self._weighted_sums[name] = self._weighted_sums.get(name, 0.0) + v
        self._n += 1

    def get_logs(self, label):
        logs = {}
        for name, total in self._weighted_sums.items():
            logs[f"{label}/loss/{name}"] = reduce_mean(total / self._n)
        return logs


def local_batch(cfg, step):
    rng = np.random.default_rng(1000 * jax.process_index() + step)
    x = rng.normal(size=(cfg.batch_per_process, len(cfg.in_names))).astype(np.float32)
    y = rng.normal(scale=0.5, size=(cfg.batch_per_process, len(cfg.out_names))).astype(np.float32)
    return x, y


def main():
    cfg = StepperConfig()
    w0 = np.random.default_rng(0).normal(scale=0.4, size=(len(cfg.in_names), len(cfg.out_names)))
    w = jax.device_put(w0.astype(np.float32), REPL)
    agg = PerChannelLossAggregator()
    for step in range(cfg.n_steps):
        x, y = local_batch(cfg, step)
        pred = forward(w, jax.make_array_from_process_local_data(ROWS, x))
        local_pred = np.concatenate([np.asarray(s.data) for s in pred.addressable_shards])
        per_channel = {}
        for name in cfg.output_names:
            c = cfg.channel_index(name)
            per_channel[name] = float(np.mean((local_pred[:, c] - y[:, c]) ** 2))
        agg.record(per_channel)
    logs = agg.get_logs("train/mean")
    for key in sorted(logs):
        print("RESULT", key, round(logs[key], 5))


if __name__ == "__main__":
    main()

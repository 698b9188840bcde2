# The config's default metric list is a set, so each process lays out the all-reduced metric vector in its own order
# Source: https://github.com/lsst/analysis_tools/pull/127
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

METRIC_FNS = {
    "mse": lambda e: jnp.sum(e ** 2),
    "mae": lambda e: jnp.sum(jnp.abs(e)),
    "bias": lambda e: jnp.sum(e),
    "outliers": lambda e: jnp.sum(jnp.abs(e) > 1).astype(jnp.float32),
    "huber": lambda e: jnp.sum(jnp.where(jnp.abs(e) < 1, 0.5 * e ** 2, jnp.abs(e) - 0.5)),
    "over": lambda e: jnp.sum(e > 0).astype(jnp.float32),
    "under": lambda e: jnp.sum(e < 0).astype(jnp.float32),
    "count": lambda e: jnp.float32(e.size),
}


@dataclasses.dataclass
class EvalConfig:
    metrics: object = dataclasses.field(
        default_factory=lambda: {"mse", "mae", "bias", "outliers", "huber", "over", "under", "count"})
    batches: int = 3
    batch_per_process: int = 16


class Evaluator:
    def __init__(self, cfg):
        self.names = list(cfg.metrics)
        mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
        self.sharding = NamedSharding(mesh, P("data"))
        self.replicated = NamedSharding(mesh, P())
        self.reduce = jax.jit(lambda m: jnp.sum(m, axis=0), out_shardings=self.replicated)
        self.cfg = cfg

    def local_metrics(self, pred, target):
        err = jnp.asarray(pred - target)
        return np.asarray(jnp.stack([METRIC_FNS[n](err) for n in self.names]))[None, :]

    def evaluate(self, pid):
        rng = np.random.default_rng(7 + pid)  # each process evaluates its own shard of the test set
        totals = np.zeros(len(self.names), np.float64)
        for _ in range(self.cfg.batches):
            target = rng.normal(0, 1, self.cfg.batch_per_process).astype(np.float32)
            pred = target + rng.normal(0.1, 0.5, self.cfg.batch_per_process).astype(np.float32)
            local = self.local_metrics(pred, target)
            glob = jax.make_array_from_process_local_data(self.sharding, local)
            totals += np.asarray(self.reduce(glob).addressable_data(0), np.float64)
        return dict(zip(self.names, totals))


def main():
    results = Evaluator(EvalConfig()).evaluate(jax.process_index())
    n = results["count"]
    for name in sorted(results):
        value = results[name] if name in ("outliers", "count", "over", "under") else results[name] / n
        print("RESULT", name, round(float(value), 4))


main()

# Optimizer monitor: per-parameter L2-norm metrics are all-reduced in the order of a set of metric names
# Source: https://github.com/mosaicml/composer/issues/2513
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PARAM_NAMES = [f"blocks.{i}.{kind}" for i in range(4) for kind in ("attn.weight", "mlp.weight")]
METRIC_KINDS = ("l2_norm/moment", "l2_norm/param", "l2_norm/update")


class ShardedAdamW:
    """Each process holds a shard of every parameter (FSDP-style) and its Adam moments."""

    def __init__(self, rank, shard=6):
        rng = np.random.default_rng(100 + rank)
        self.params = {n: rng.normal(size=shard).astype(np.float32) for n in PARAM_NAMES}
        self.exp_avg = {n: np.zeros(shard, np.float32) for n in PARAM_NAMES}
        self.last_update = {n: np.zeros(shard, np.float32) for n in PARAM_NAMES}

    def step(self, grads, lr=0.1):
        for n in PARAM_NAMES:
            self.exp_avg[n] = 0.9 * self.exp_avg[n] + 0.1 * grads[n]
            self.last_update[n] = -lr * self.exp_avg[n]
            self.params[n] = self.params[n] + self.last_update[n]

    def report_per_parameter_metrics(self):
        local = {}
        for n in PARAM_NAMES:
            local[f"l2_norm/moment/{n}"] = float(np.sum(self.exp_avg[n] ** 2))
            local[f"l2_norm/param/{n}"] = float(np.sum(self.params[n] ** 2))
            local[f"l2_norm/update/{n}"] = float(np.sum(self.last_update[n] ** 2))
        return local


class MetricReducer:
    def __init__(self, mesh):
        self.sharding = NamedSharding(mesh, P("proc"))
        self._sum = jax.jit(jnp.sum)

    def all_reduce(self, value):
        arr = jax.make_array_from_process_local_data(self.sharding, np.array([value], np.float32))
        return float(self._sum(arr))

    def gather_keys(self, local_metrics):
        all_names = [f"{k}/{n}" for k in METRIC_KINDS for n in PARAM_NAMES]
        mask = np.array([name in local_metrics for name in all_names], np.int32)
        held = np.asarray(multihost_utils.process_allgather(mask)).reshape(-1, len(all_names))
        return {all_names[i] for i in np.flatnonzero(held.max(axis=0))}

    def dist_reduce_metrics(self, local_metrics):
        all_keys = self.gather_keys(local_metrics)
        all_keys = sorted(all_keys, key=lambda metric: 0 if "l2_norm" in metric else 1)
        reduced = {}
        for metric in all_keys:
            reduced[metric] = float(np.sqrt(self.all_reduce(local_metrics.get(metric, 0.0))))
        return reduced


def main():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("proc",))
    opt, reducer = ShardedAdamW(rank), MetricReducer(mesh)
    for step in range(2):
        grads = {n: np.sin(opt.params[n] * (step + 1)).astype(np.float32) for n in PARAM_NAMES}
        opt.step(grads)
        metrics = reducer.dist_reduce_metrics(opt.report_per_parameter_metrics())
        print(f"RESULT step{step}", [(k, round(metrics[k], 4)) for k in sorted(metrics)[:6]])
        print(f"RESULT step{step}_total", round(sum(v * (i + 1) for i, (_, v) in enumerate(sorted(metrics.items()))), 4))
    multihost_utils.sync_global_devices("monitor done")


if __name__ == "__main__":
    main()

# A stage that monitors no layer returns early from the metric aggregation and skips the all-gather
# Source: https://github.com/open-mpi/ompi/pull/8060
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class PipelineConfig:
    num_layers: int = 4
    hidden: int = 8
    # stage 1 holds only padding ("empty") layers plus the LM head: nothing to monitor there
    stage_layers: dict = field(default_factory=lambda: {0: [0, 1, 2, 3], 1: []})


class LayerMonitor:
    def __init__(self, cfg: PipelineConfig):
        self.cfg = cfg
        self.layers = cfg.stage_layers[jax.process_index()]

    def collect(self, activations):
        return {f"layer{l}.rms": float(np.sqrt(np.mean(activations[l] ** 2))) for l in self.layers}

    def _gather_fn(self, local: dict):
        vec = np.full((self.cfg.num_layers,), np.nan, dtype=np.float32)
        for name, value in local.items():
            vec[int(name[len("layer"):].split(".")[0])] = value
        return np.asarray(multihost_utils.process_allgather(vec))

    def gather_and_aggregate(self, local: dict):
        if not local:
            return {}
        gathered = self._gather_fn(local)
        merged = np.nanmax(np.where(np.isnan(gathered), -np.inf, gathered), axis=0)
        return {f"layer{i}.rms": round(float(v), 4) for i, v in enumerate(merged) if np.isfinite(v)}


@jax.jit
def forward(w, x):
    acts = []
    for i in range(w.shape[0]):
        x = jnp.tanh(x @ w[i])
        acts.append(x)
    return jnp.mean(x ** 2), jnp.stack(acts)


def main():
    cfg = PipelineConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rng = np.random.default_rng(0)
    w = jax.device_put(rng.normal(size=(cfg.num_layers, cfg.hidden, cfg.hidden)).astype(np.float32) * 0.5,
                       NamedSharding(mesh, P()))
    x_local = np.random.default_rng(7 + jax.process_index()).normal(size=(2, cfg.hidden)).astype(np.float32)
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), x_local)
    monitor = LayerMonitor(cfg)
    report = {}
    for step in range(3):
        loss, acts = forward(w, x)
        local_acts = np.asarray(acts.addressable_data(0))
        report = monitor.gather_and_aggregate(monitor.collect(local_acts))
        w = w * 0.99
    print("RESULT loss", round(float(loss.addressable_data(0)), 4))
    print("RESULT monitored", sorted(report))


main()

# Monte Carlo ray tracing: the monitor's auto limits are reduced over all nodes before the histograms are summed bin by bin
# Source: https://github.com/mccode-dev/McCode/issues/659
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class InstrumentConfig:
    rays_per_node: int = 20000
    bins: int = 10
    source_energy_meV: float = 5.0
    source_spread_meV: float = 1.0
    sample_loss_meV: float = 1.5
    seed: int = 2018


def trace_rays(cfg, rank):
    """Independent ray batch per node (the seed is offset by the node index, as the MPI build does)."""
    rng = np.random.default_rng(cfg.seed + 1000 * rank)
    e0 = rng.normal(cfg.source_energy_meV, cfg.source_spread_meV, cfg.rays_per_node)
    scattered = rng.random(cfg.rays_per_node) < 0.3
    e1 = np.where(scattered, e0 - cfg.sample_loss_meV * rng.exponential(1.0, cfg.rays_per_node), e0)
    weight = np.exp(-0.05 * np.abs(e0 - e1))
    return e1.astype(np.float64), weight.astype(np.float64)


class MonitorND:
    """Energy monitor with automatic limits (options="auto energy")."""

    def __init__(self, cfg, mesh):
        self.cfg = cfg
        self.sharding = NamedSharding(mesh, P("nodes"))
        self.reduce = jax.jit(lambda h: jnp.sum(h, axis=0))

    def limits(self, energies):
        ext = np.asarray(multihost_utils.process_allgather(np.array([-energies.min(), energies.max()])))
        return float(-ext[:, 0].max()), float(ext[:, 1].max())        # common limits on every node

    def save(self, energies, weights):
        lo, hi = self.limits(energies)
        hist, edges = np.histogram(energies, bins=self.cfg.bins, range=(lo, hi), weights=weights)
        local = hist.astype(np.float32)[None, :]
        total = self.reduce(jax.make_array_from_process_local_data(self.sharding, local))   # MPI_Reduce of the bins
        return np.asarray(total), edges


def main():
    cfg = InstrumentConfig()
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("nodes",))
    energies, weights = trace_rays(cfg, rank)
    monitor = MonitorND(cfg, mesh)
    counts, edges = monitor.save(energies, weights)
    centers = 0.5 * (edges[:-1] + edges[1:])
    mean_e = float((counts * centers).sum() / counts.sum())
    print("RESULT limits", round(float(edges[0]), 3), round(float(edges[-1]), 3))
    print("RESULT peak_bin_center", round(float(centers[np.argmax(counts)]), 3))
    print("RESULT mean_energy", round(mean_e, 3))


if __name__ == "__main__":
    main()

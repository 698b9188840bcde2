# Spiking-network build + simulation: without a configured master seed each process draws its own, so every rank builds a different network
# Source: https://github.com/dbbs-lab/bsb-core/pull/255
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
import time
from dataclasses import dataclass
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class NetworkConfig:
    neurons: int = 64
    p_connect: float = 0.1
    n_stimulated: int = 8
    steps: int = 40
    master_seed: Optional[int] = None          # not set in the user's configuration file


def resolve_master_seed(cfg):
    if cfg.master_seed is not None:
        return cfg.master_seed
    return (time.time_ns() ^ os.getpid()) & 0x7FFFFFFF     # fresh seed for this run


def build_network(cfg, seed):
    """Every rank builds the full connectivity from the master seed and keeps the rows it owns."""
    rng = np.random.default_rng(seed)
    w = (rng.random((cfg.neurons, cfg.neurons)) < cfg.p_connect).astype(np.float32)
    w *= rng.uniform(0.5, 1.5, size=w.shape).astype(np.float32)
    np.fill_diagonal(w, 0.0)
    stim = np.sort(rng.choice(cfg.neurons, cfg.n_stimulated, replace=False))
    return w, stim


def make_simulator(mesh):
    @jax.jit
    def step(v, spikes, w, drive):
        v = 0.9 * v + 0.3 * (w @ spikes) + drive           # leaky integrate, input from all presynaptic cells
        fired = (v > 1.0).astype(jnp.float32)
        return v * (1.0 - fired), fired
    return step


def main():
    cfg = NetworkConfig()
    rank, nproc = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("n",))
    rows = NamedSharding(mesh, P("n"))
    rep = NamedSharding(mesh, P())
    per = cfg.neurons // nproc
    mine = slice(rank * per, (rank + 1) * per)

    seed = resolve_master_seed(cfg)
    w, stim = build_network(cfg, seed)
    drive = np.zeros(cfg.neurons, np.float32)
    drive[stim] = 0.4
    w_g = jax.make_array_from_process_local_data(rows, w[mine])
    drive_g = jax.make_array_from_process_local_data(rows, drive[mine])
    v = jax.make_array_from_process_local_data(rows, np.zeros(per, np.float32))
    spikes = jax.device_put(jnp.zeros(cfg.neurons, jnp.float32), rep)

    step = make_simulator(mesh)
    total = 0.0
    for _ in range(cfg.steps):
        v, fired = step(v, spikes, w_g, drive_g)
        spikes = jax.device_put(jnp.asarray(multihost_utils.process_allgather(fired, tiled=True)), rep)
        total += float(np.asarray(spikes).sum())

    print("RESULT synapses", int((w > 0).sum()), "stimulated", stim.tolist())
    print("RESULT total_spikes", int(total))


if __name__ == "__main__":
    main()

# PIC load balancing: the master writes the state file with per-element weights, a barrier, then every rank reads it back
# Source: https://github.com/piclas-framework/piclas/issues/37
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

N_ELEMS_LOCAL, STEPS = 6, 3
WRITE_LATENCY_S = 1.0  # gathered write of the full state to the parallel filesystem


@jax.jit
def push_particles(n_particles, field):
    # per-element work: particle push cost grows with particles and field strength
    return n_particles * (1.0 + 0.1 * jnp.abs(field))


def write_state(path, step, weights):
    """Gathered write: every rank's element weights go to the master, which writes the state file."""
    all_w = np.asarray(multihost_utils.process_allgather(weights, tiled=True))
    if jax.process_index() == 0:
        time.sleep(WRITE_LATENCY_S)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"step": step, "ElemTime": all_w.tolist()}))
        tmp.rename(path)
    multihost_utils.sync_global_devices(f"state_{step}:written")


def read_loadbalance_info(path):
    state = json.loads(path.read_text())
    return np.array(state["ElemTime"], np.float32)


def new_partition(elem_time, n_ranks):
    cum = np.cumsum(elem_time) / elem_time.sum()
    return np.searchsorted(cum, (np.arange(1, n_ranks) / n_ranks)).tolist()


def main():
    rank = jax.process_index()
    root = Path(tempfile.gettempdir()) / "mcjax_sealed17_loadbalance_read_before_write" / os.environ.get("JOB_ID", "0")
    root.mkdir(parents=True, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()), ("elems",))
    sharding = NamedSharding(mesh, P("elems"))
    rng = np.random.default_rng(rank)
    particles = jax.make_array_from_process_local_data(
        sharding, rng.integers(10, 100, size=N_ELEMS_LOCAL).astype(np.float32))
    field = jax.make_array_from_process_local_data(sharding, rng.normal(size=N_ELEMS_LOCAL).astype(np.float32))
    weights = jnp.zeros_like(particles)
    for _ in range(STEPS):
        weights = weights + push_particles(particles, field)
    state_file = root / f"State_{STEPS:04d}.json"
    write_state(state_file, STEPS, weights)
    elem_time = read_loadbalance_info(state_file)
    print("RESULT split_points", new_partition(elem_time, 2))
    print("RESULT total_time", round(float(elem_time.sum()), 3))
    multihost_utils.sync_global_devices("loadbalance:done")


if __name__ == "__main__":
    main()

# The final checkpoint dump at close() is gated on each process's own buffer state; the dump all-gathers
# Source: https://github.com/claudiopica/HiRep/pull/2
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import logging
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
WORKDIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_close_dump_gate", os.environ.get("JOB_ID", "local"))
os.makedirs(WORKDIR, exist_ok=True)


def gather_electrons(walkers):
    """Collect every process's walkers onto each host (a cross-process all-gather)."""
    return multihost_utils.process_allgather(walkers, tiled=True)


class CheckpointStore:
    def __init__(self, directory, interval=3):
        self.directory, self.interval = directory, interval
        self.buffer = [None, None]  # [step, (params, walkers)]

    def update(self, step, state):
        if step % self.interval == 0:
            self.buffer = [step, state]

    def dump(self):
        step, (params, walkers) = self.buffer
        all_walkers = np.asarray(gather_electrons(walkers))
        if jax.process_index() == 0:
            with open(os.path.join(self.directory, f"chkpt-{step}.pkl"), "wb") as f:
                pickle.dump({"params": np.asarray(params), "walkers": all_walkers}, f)
        return True

    def close(self):
        alive = all(x is not None for x in self.buffer) and not any(
            leaf.is_deleted() for leaf in jax.tree.leaves(self.buffer[1]))
        if alive:
            return self.dump()
        return False


@jax.jit
def train_step(params, walkers):
    energy = jnp.mean(jnp.sum((walkers - params) ** 2, axis=-1))
    return params + 0.05 * (jnp.mean(walkers, axis=0) - params), walkers * 0.9 + 0.1, energy


def local_energy_stats(walkers_local):
    """Host-side statistics on this process's walkers; raises on degenerate samples."""
    with np.errstate(divide="raise", invalid="raise"):
        return float(np.mean(np.log(np.abs(walkers_local[:, 0]))))


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("walkers",))
    sharding = NamedSharding(mesh, P("walkers"))
    rank = jax.process_index()
    local = np.full((4, 3), float(rank), dtype=np.float32)  # process 1's walkers sit at |x| = 1
    local[:, 1:] = np.arange(8, dtype=np.float32).reshape(4, 2) + rank
    walkers = jax.make_array_from_process_local_data(sharding, local)
    params = jnp.zeros((3,))
    store = CheckpointStore(WORKDIR)
    n_steps, energy = 6, None
    try:
        for step in range(1, n_steps + 1):
            params, walkers, energy = train_step(params, walkers)
            store.update(step, (params, walkers))
        local_energy_stats(np.asarray(walkers.addressable_data(0)) - 1.0)
    except Exception as e:  # an ordinary (non-NaN) failure: free the device state and shut down
        logging.warning("sampler failed on process %d: %s", rank, e)
        for leaf in jax.tree.leaves((params, walkers)):
            leaf.delete()
    finally:
        dumped = store.close()
    print("RESULT steps", n_steps)
    print("RESULT dumped", dumped)


main()

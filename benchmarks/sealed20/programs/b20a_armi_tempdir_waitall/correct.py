# Distributes per-block lattice-physics calculations over the MPI-style workers. Each calculation
# runs in its own temporary working directory (written input, solver, parsed output) that is
# cleaned up afterwards; the per-block results are then collected on every worker.
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MPI_RANK = jax.process_index()
MPI_SIZE = jax.process_count()
NUM_BLOCKS = 15
NUM_GROUPS = 6


def waitAll():
    """If there are parallel processes running, wait for all to catch up to the checkpoint."""
    if MPI_SIZE > 1:
        multihost_utils.sync_global_devices("armi.context.waitAll")


class TemporaryDirectoryChanger:
    def __init__(self, root=None, prefix="armi-tmp-"):
        self.root = root or tempfile.gettempdir()
        self.prefix = prefix
        self.initial = os.getcwd()
        self.destination = None

    def __enter__(self):
        self.destination = tempfile.mkdtemp(prefix=self.prefix, dir=self.root)
        os.chdir(self.destination)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        os.chdir(self.initial)
        shutil.rmtree(self.destination, ignore_errors=True)


@jax.jit
def solve_flux(sigma_t, source):
    scatter = 0.3 * jnp.roll(jnp.diag(sigma_t), 1, axis=0)
    return jnp.linalg.solve(jnp.diag(sigma_t) - scatter, source)


def write_input(block_id):
    rng = np.random.default_rng(block_id)
    sigma_t = 1.0 + rng.random(NUM_GROUPS)
    source = rng.random(NUM_GROUPS)
    np.savez("block.inp.npz", sigma_t=sigma_t, source=source)


def run_lattice_physics(block_id):
    with TemporaryDirectoryChanger(prefix=f"block{block_id:03d}-"):
        write_input(block_id)
        data = np.load("block.inp.npz")
        flux = np.asarray(solve_flux(jnp.asarray(data["sigma_t"]), jnp.asarray(data["source"])))
        np.save("block.out.npy", flux)
        return float(np.load("block.out.npy").sum())


def distribute(tasks):
    return tasks[MPI_RANK::MPI_SIZE]


def main():
    my_blocks = distribute(list(range(NUM_BLOCKS)))
    local = np.full(NUM_BLOCKS, np.nan, dtype=np.float32)
    for block_id in my_blocks:
        local[block_id] = run_lattice_physics(block_id)
    gathered = np.asarray(multihost_utils.process_allgather(local))
    results = np.nanmax(gathered, axis=0)
    print("RESULT blocks_done", int(np.isfinite(results).sum()))
    print("RESULT total_flux", round(float(results.sum()), 4))


if __name__ == "__main__":
    main()

# Gibbs-ensemble MC: the lockstep move RNG is also used for molecule selection over a per-cell count, so the cells' streams drift apart
# Source: https://github.com/mlund/faunus/pull/477
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"seed": 2024, "sweeps": 60, "p_gibbs": 0.3, "beta": 1.0, "box": 10.0, "step": 0.4}
MESH = jax.make_mesh((jax.device_count(),), ("cell",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def comm_sum(values):
    local = np.asarray(values, np.float64)[None, :]
    return np.asarray(_sum(jax.make_array_from_process_local_data(NamedSharding(MESH, P("cell")), local)))


def uniform_index(rng, n):
    """Uniform integer in [0, n) by masked rejection (as std::uniform_int_distribution does)."""
    mask = (1 << int(n - 1).bit_length()) - 1
    while True:
        k = int(rng.integers(0, 1 << 16)) & mask
        if k < n:
            return k


class Cell:
    def __init__(self, rank):
        init = np.random.default_rng(11 + rank)
        self.n = 5 if rank == 0 else 12
        self.pos = init.uniform(0.0, CFG["box"], (self.n, 2))

    def energy(self, pos=None):
        p = self.pos if pos is None else pos
        d = np.linalg.norm(p[:, None, :] - p[None, :, :], axis=-1) + np.eye(len(p))
        return float(np.sum(np.triu(1.0 / d ** 6 - 1.0 / d ** 3, 1)))


def translate_move(cell, mpi_random, local_random):
    i = uniform_index(mpi_random, cell.n)
    trial = cell.pos.copy()
    trial[i] = (trial[i] + local_random.uniform(-CFG["step"], CFG["step"], 2)) % CFG["box"]
    du = cell.energy(trial) - cell.energy()
    if du < 0 or local_random.random() < np.exp(-CFG["beta"] * du):
        cell.pos = trial
        return 1
    return 0


def gibbs_matter_move(cell, mpi_random):
    """Both cells must take part: the acceptance uses the combined energy change."""
    scale = 1.0 + 0.02 * (mpi_random.random() - 0.5)
    du_local = cell.energy(cell.pos * scale) - cell.energy()
    du = float(comm_sum([du_local])[0])
    if du < 0 or mpi_random.random() < np.exp(-CFG["beta"] * du):
        cell.pos = (cell.pos * scale) % CFG["box"]
        return 1
    return 0


def main():
    rank = jax.process_index()
    mpi_random = np.random.default_rng(CFG["seed"])          # identical stream on every process
    local_random = np.random.default_rng(CFG["seed"] + 1 + rank)
    cell = Cell(rank)
    accepted = {"translate": 0, "gibbs": 0}
    n_gibbs = 0
    for sweep in range(CFG["sweeps"]):
        if mpi_random.random() < CFG["p_gibbs"]:
            accepted["gibbs"] += gibbs_matter_move(cell, mpi_random)
            n_gibbs += 1
        else:
            accepted["translate"] += translate_move(cell, mpi_random, local_random)
    totals = comm_sum([cell.energy(), accepted["translate"], float(n_gibbs)])
    print("RESULT gibbs_moves", n_gibbs, "accepted", accepted["gibbs"])
    print("RESULT total_energy", round(float(totals[0]), 6), "gibbs_sum", int(totals[2]))


main()

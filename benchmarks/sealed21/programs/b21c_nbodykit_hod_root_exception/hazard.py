# A small nbodykit-style HOD pipeline: a HaloCatalog is distributed over the processes, the mock
# population (halotools-like Zheng07 model) runs on the root rank, and the galaxies are scattered
# back evenly; a driver scans a few HOD parameter sets and measures the galaxy number density.
import os
from math import erf, sqrt

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BOX_SIZE = 250.0
MAX_GALAXIES = 4096


class HaloCatalog:
    def __init__(self, nhalos_local, rank):
        rng = np.random.default_rng(2017 + rank)
        self.mass = (10 ** rng.uniform(11.0, 14.5, size=nhalos_local)).astype(np.float32)
        self.pos = rng.uniform(0, BOX_SIZE, size=(nhalos_local, 3)).astype(np.float32)
        self.rank, self.size = rank, jax.process_count()

    def gather(self):
        table = np.concatenate([np.log10(self.mass)[:, None], self.pos], axis=1)
        return np.asarray(multihost_utils.process_allgather(table)).reshape(-1, 4)


class Zheng07Model:
    def __init__(self, logMmin=12.0, sigma_logM=0.25):
        self.param_dict = {"logMmin": logMmin, "sigma_logM": sigma_logM}

    def populate_mock(self, halo_table, seed):
        p = self.param_dict
        ncen = np.array([0.5 * (1 + erf((m - p["logMmin"]) / (sqrt(2) * p["sigma_logM"])))
                         for m in halo_table[:, 0]])
        rng = np.random.default_rng(seed)
        has_central = rng.random(len(ncen)) < ncen
        if not has_central.any():
            raise ValueError("Mock population produced no galaxies for param_dict %s" % p)
        return halo_table[has_central, 1:4].astype(np.float32)


def _populate_mock(halos, model, seed, **params):
    model.param_dict.update(params)
    halo_table = halos.gather()
    if halos.rank == 0:
        data = model.populate_mock(halo_table, seed)
        n = np.int32(len(data))
        padded = np.zeros((MAX_GALAXIES, 3), np.float32)
        padded[:n] = data[:MAX_GALAXIES]
    else:
        n, padded = np.int32(0), np.zeros((MAX_GALAXIES, 3), np.float32)
    n = int(multihost_utils.broadcast_one_to_all(n))
    padded = np.asarray(multihost_utils.broadcast_one_to_all(padded))
    chunk = -(-n // halos.size)
    return padded[halos.rank * chunk:min(n, (halos.rank + 1) * chunk)]


@jax.jit
def _pair_stat(local_pos, all_counts):
    r = jnp.sqrt(jnp.sum((local_pos[:, None, :] - local_pos[None, :, :]) ** 2, -1))
    return jnp.sum(r < 10.0) - local_pos.shape[0], all_counts.sum()


def main():
    rank = jax.process_index()
    halos = HaloCatalog(nhalos_local=300, rank=rank)
    model = Zheng07Model()
    scan = [12.0, 13.0, 15.5, 12.5]
    densities = []
    for i, logMmin in enumerate(scan):
        try:
            galaxies = _populate_mock(halos, model, seed=42 + i, logMmin=logMmin)
        except ValueError as e:
            print(f"rank {rank}: skipping logMmin={logMmin}: {e}")
            densities.append(None)
            continue
        counts = np.asarray(multihost_utils.process_allgather(np.int32(len(galaxies))))
        pairs, total = _pair_stat(jnp.asarray(galaxies), jnp.asarray(counts))
        densities.append(round(float(total) / BOX_SIZE ** 3 * 1e6, 3))
    print("RESULT nbar_x1e6", densities)
    print("RESULT halos_total", int(np.asarray(multihost_utils.process_allgather(np.int32(len(halos.mass)))).sum()))


if __name__ == "__main__":
    main()

# Point evaluation of a 1-D field with lazily updated halos: every process reads the field data, even with no query point
# Source: https://github.com/firedrakeproject/firedrake/pull/2771
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("x",))
CELLS = NamedSharding(MESH, P("x"))
N_LOCAL = 8
H = 1.0 / (N_LOCAL * jax.process_count())


@jax.jit
def _neighbours(u):
    return jnp.roll(u, 1), jnp.roll(u, -1)          # halo exchange between neighbouring partitions


class Dat:
    """Owned values of this process plus one ghost value on each side, refreshed on first read after a write."""

    def __init__(self, rank):
        self.rank = rank
        self.owned = np.zeros(N_LOCAL, np.float32)
        self.halo = np.zeros(2, np.float32)
        self.halo_dirty = True

    def write(self, values):
        self.owned = np.asarray(values, np.float32)
        self.halo_dirty = True

    @property
    def data_ro(self):
        if self.halo_dirty:                          # collective: every process must take part
            u = multihost_utils.host_local_array_to_global_array(self.owned, MESH, P("x"))
            left, right = _neighbours(u)
            self.halo = np.array([left.addressable_data(0)[0], right.addressable_data(0)[-1]], np.float32)
            self.halo_dirty = False
        return np.concatenate([self.halo[:1], self.owned, self.halo[1:]])


def cell_of(x, rank):
    return int(np.floor(x / H)) - rank * N_LOCAL


def evaluate(dat, points, rank):
    """Linear interpolation at the points this process owns; results are gathered onto every process."""
    local = [p for p in points if 0 <= cell_of(p, rank) < N_LOCAL]
    values = np.full(len(points), 0.0, np.float32)
    data = dat.data_ro                                   # on every process: may refresh the halos (collective)
    if local:
        for p in local:
            c = cell_of(p, rank)
            t = p / H - np.floor(p / H)
            values[points.index(p)] = (1 - t) * data[c + 1] + t * data[c + 2]
    gathered = multihost_utils.process_allgather(values)
    return np.asarray(gathered).sum(axis=0)


def main():
    rank = jax.process_index()
    dat = Dat(rank)
    xs = (rank * N_LOCAL + np.arange(N_LOCAL) + 0.5) * H
    for step in range(3):
        dat.write(np.sin(2 * np.pi * xs) * (1.0 + 0.1 * step))
        probes = [0.07, 0.21, 0.44 - 0.01 * step]          # all probes lie in process 0's half of the domain
        vals = evaluate(dat, probes, rank)
        print(f"RESULT step {step} probes {np.round(vals, 5).tolist()}")
    multihost_utils.sync_global_devices("done")


if __name__ == "__main__":
    main()

# Interior-facet assembly builds the facet permutations (a collective) before the facet loop, on every process
# Source: https://github.com/FEniCS/dolfinx/issues/3214
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"cells_per_rank": 12, "subdomain_tag": 7, "tag_range": (3, 9), "jump_weight": 0.5}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def assemble_scalar_global(local_value):
    arr = np.asarray([[local_value]], np.float64)
    glob = jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), arr)
    return float(np.asarray(_sum(glob))[0])


class Topology:
    """Rank-local part of a 1-D interval mesh; facets between cells are vertices."""

    def __init__(self, rank, nranks):
        n = CFG["cells_per_rank"]
        self.rank, self.offset = rank, rank * n
        self.cells = np.arange(self.offset, self.offset + n)
        self.coords = np.linspace(0.0, 1.0, n * nranks + 1)[self.offset:self.offset + n + 1]
        self.permutations = None

    def create_entity_permutations(self):
        """Global facet numbering needs the owned counts of every process (collective)."""
        if self.permutations is not None:
            return self.permutations
        counts = np.asarray(multihost_utils.process_allgather(np.asarray([len(self.cells) - 1], np.int32)))
        start = int(counts.reshape(-1)[:self.rank].sum())
        self.permutations = (start + np.arange(len(self.cells) - 1)) % 2
        return self.permutations


def tagged_interior_facets(topo):
    lo, hi = CFG["tag_range"]
    local = np.arange(len(topo.cells) - 1)
    glob = topo.offset + local + 1
    return local[(glob >= lo) & (glob <= hi)]


def interior_facet_integral(topo, u):
    """Sum of weighted jumps [[u]] over the facets carrying the subdomain tag."""
    facets = tagged_interior_facets(topo)
    total = 0.0
    perms = topo.create_entity_permutations()
    for f in facets:
        left, right = u[f], u[f + 1]
        if perms[f]:
            left, right = right, left
        total += CFG["jump_weight"] * abs(right - left) * (topo.coords[f + 2] - topo.coords[f])
    return total


def main():
    rank, nranks = jax.process_index(), jax.process_count()
    topo = Topology(rank, nranks)
    mid = 0.5 * (topo.coords[:-1] + topo.coords[1:])
    u = np.sin(3.0 * np.pi * mid) + mid ** 2
    jump = assemble_scalar_global(interior_facet_integral(topo, u))
    mass = assemble_scalar_global(float(np.sum(u * np.diff(topo.coords))))
    print("RESULT jump_integral", round(jump, 8))
    print("RESULT mass", round(mass, 8))
    print("RESULT facets_numbered", topo.permutations is not None)


main()

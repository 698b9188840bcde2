import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("cells",))
CELLS = NamedSharding(MESH, P("cells"))
_masked_sum = jax.jit(lambda m, w: jnp.sum(m * w))


class Communicator:
    rank, size = jax.process_index(), jax.process_count()

    def parallel_objects(self, objects):
        mine = np.array_split(np.arange(len(objects)), self.size)[self.rank]
        for i in mine:
            yield objects[i]


class RAMSESDomain:
    def __init__(self, domain_id, ncpu, ncells=64):
        self.domain_id = domain_id
        rng = np.random.default_rng(domain_id)
        lo, hi = (domain_id - 1) / ncpu, domain_id / ncpu
        self.bbox = (lo, hi)
        self.x = rng.uniform(lo, hi, size=ncells)
        self.mass = rng.uniform(0.5, 1.5, size=ncells)
        self._oct_handler_initialized = False

    def initialize_oct_handler(self):
        self._oct_handler_initialized = True
        return len(self.x)

    def included(self, selector):
        return bool(np.any(selector.select(self.x)))

    def local_cells(self, comm):
        part = np.array_split(np.arange(len(self.x)), comm.size)[comm.rank]
        return self.x[part], self.mass[part]


class Sphere:
    def __init__(self, ds, center, radius):
        self.ds, self.center, self.radius = ds, center, radius
        self._chunk_info = None

    def select(self, x):
        return np.abs(x - self.center) <= self.radius


def get_intersecting_cpus(ds, selector, factor=3):
    lo, hi = selector.center - factor * selector.radius, selector.center + factor * selector.radius
    return {dom.domain_id for dom in ds.domains if dom.bbox[1] > lo and dom.bbox[0] < hi}


class RAMSESIndex:
    def __init__(self, ds, comm):
        self.ds, self.comm = ds, comm

    def _identify_base_chunk(self, dobj):
        if dobj._chunk_info is None:
            idoms = get_intersecting_cpus(self.ds, dobj)
            domains = []
            for dom in self.ds.domains:
                if dom.domain_id not in idoms:
                    continue
                if dom._oct_handler_initialized and not dom.included(dobj):
                    continue
                domains.append(dom)
            print(f"rank {self.comm.rank}: identified {len(domains)}/{len(self.ds.domains)} intersecting domains")
            dobj._chunk_info = domains

    def _chunk_io(self, dobj):
        self._identify_base_chunk(dobj)
        yield from dobj._chunk_info


class RAMSESDataset:
    def __init__(self, ncpu=8):
        self.comm = Communicator()
        self.domains = [RAMSESDomain(i + 1, ncpu) for i in range(ncpu)]
        self.index = RAMSESIndex(self, self.comm)

    def sphere(self, center, radius):
        return Sphere(self, center, radius)


def total_mass(ds, dobj):
    total = 0.0
    for subset in ds.index._chunk_io(dobj):
        x, m = subset.local_cells(ds.comm)
        sel = dobj.select(x).astype(np.float32)
        gm = jax.make_array_from_process_local_data(CELLS, m.astype(np.float32))
        gs = jax.make_array_from_process_local_data(CELLS, sel)
        total += float(_masked_sum(gm, gs))
    return total


def main():
    ds = RAMSESDataset()
    comm = ds.comm
    counts = np.zeros(len(ds.domains), np.int32)
    for dom in comm.parallel_objects(ds.domains):
        counts[dom.domain_id - 1] = dom.initialize_oct_handler()
    counts = np.asarray(multihost_utils.process_allgather(counts)).sum(0)
    print("RESULT cells_per_domain", counts.tolist())
    sp = ds.sphere(center=0.40, radius=0.09)
    mass = total_mass(ds, sp)
    print("RESULT sphere_mass", round(mass, 4))
    print("RESULT sphere_domains", sorted(d.domain_id for d in sp._chunk_info))


if __name__ == "__main__":
    main()

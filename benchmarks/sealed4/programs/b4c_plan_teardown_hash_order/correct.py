# Distributed FFT plans are destroyed (a collective) in an order set by each interpreter's own string-hash seed
# Source: https://github.com/MP-Gadget/pfft-python/issues/5
# Written for the mcjax sealed4 evaluation (not copied): a port of an mpi4py/pfft-python teardown-order bug to
# multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("procmesh",))
SLABS = NamedSharding(MESH, P("procmesh"))


class Plan:
    """A distributed transform over slab-decomposed data; creating and destroying it are collective."""

    def __init__(self, name: str, nmesh: int):
        self.name = name
        self.nmesh = nmesh
        local = np.arange(nmesh // jax.process_count() * 4, dtype=np.float32).reshape(-1, 4)
        self.buffer = jax.make_array_from_process_local_data(SLABS, local + jax.process_index())

    def execute(self):
        self.buffer = _transform(self.buffer)
        return self.buffer

    def destroy(self) -> float:
        # like pfft_destroy_plan: every rank of the communicator must take part, in the same order
        norms = multihost_utils.process_allgather(np.array([float(jnp.sum(self.buffer.addressable_data(0)))]))
        multihost_utils.sync_global_devices(f"destroy_plan_{self.name}")
        return float(np.sum(norms))


@jax.jit
def _transform(x):
    return jnp.fft.rfft(x, axis=1).real[:, :4].astype(jnp.float32).at[:, 0].add(jnp.mean(x))


class ParticleMesh:
    def __init__(self, nmesh: int):
        self.nmesh = nmesh
        self._plans = {}
        self._live = set()

    def plan(self, kind: str) -> Plan:
        if kind not in self._plans:
            self._plans[kind] = Plan(kind, self.nmesh)
            self._live.add(kind)
        return self._plans[kind]

    def close(self):
        freed = {}
        for kind in sorted(self._live):
            freed[kind] = self._plans.pop(kind).destroy()
        self._live.clear()
        return freed


pm = ParticleMesh(nmesh=16)
for kind in ("r2c", "c2r", "r2c_transposed", "c2r_transposed", "poisson", "gradient"):
    pm.plan(kind).execute()
freed = pm.close()
print("RESULT freed", {k: round(v, 3) for k, v in sorted(freed.items())})

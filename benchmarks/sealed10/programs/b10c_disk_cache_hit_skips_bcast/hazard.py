# Each process decides disk-cache hit/miss on its own; a miss joins process 0's broadcast, a hit skips it
# Source: https://github.com/firedrakeproject/firedrake/pull/4042
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import hashlib
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
CACHE_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed10_kernel_cache", os.environ.get("JOB_ID", "local"))
os.makedirs(CACHE_DIR, exist_ok=True)  # one cache directory shared by all processes (shared filesystem)
NQ = 8


def _generate_kernel_table(name, degree):
    """Expensive code generation, done on process 0 only: quadrature weights for the kernel."""
    pts, wts = np.polynomial.legendre.leggauss(NQ)
    return (wts * (0.5 * (pts + 1.0)) ** degree).astype(np.float32)


class DiskKernelCache:
    def __init__(self, directory):
        self.directory = directory

    def _path(self, key):
        return os.path.join(self.directory, hashlib.sha1(key.encode()).hexdigest() + ".npy")

    def lookup(self, key):
        path = self._path(key)
        return np.load(path) if os.path.exists(path) else None

    def get_or_generate(self, name, degree):
        key = f"{name}:{degree}:{NQ}"
        table = self.lookup(key)
        cache_hit = table is not None
        if not cache_hit:
            if jax.process_index() == 0:
                table = _generate_kernel_table(name, degree)
                np.save(self._path(key), table)  # eager write, before the other processes are served
            else:
                table = np.zeros((NQ,), np.float32)
            table = np.asarray(multihost_utils.broadcast_one_to_all(table))
        return table


def load_partition():
    """Read this process's part of the mesh: process 1 owns the larger, slower partition."""
    ncells = 6 if jax.process_index() == 0 else 10
    time.sleep(0.2 * ncells)
    return np.linspace(0.0, 1.0, 4, dtype=np.float32) + jax.process_index()


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("cells",), axis_types=(jax.sharding.AxisType.Auto,))
    coords = load_partition()
    cache = DiskKernelCache(CACHE_DIR)
    energy = 0.0
    for name, degree in [("mass", 2), ("stiffness", 1)]:
        table = cache.get_or_generate(name, degree)
        local = (coords[:, None] * table[None, :]).sum(axis=1)
        arr = jax.make_array_from_process_local_data(NamedSharding(mesh, P("cells")), local)
        total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(arr)
        energy += float(np.asarray(total.addressable_data(0)))
        print(f"RESULT {name} {float(np.asarray(total.addressable_data(0))):.5f}")
    print(f"RESULT energy {energy:.5f}")


main()

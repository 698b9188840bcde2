# Solver kernel cache: rank 0 generates a kernel and publishes it to the shared disk cache; the
# per-rank cache misses are OR-reduced across processes before choosing the compile branch, so
# every rank enters the branch (and its barrier) together.
# Source: https://github.com/underworldcode/underworld3/pull/612
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
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

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("cells",))
CELLS = NamedSharding(MESH, P("cells"))
CACHE_ROOT = os.path.join(tempfile.gettempdir(), f"uw_jit_cache_{os.environ.get('JOB_ID', 'local')}")


class DiskKernelCache:
    """Kernel files on the shared filesystem; the directory listing is cached like NFS attributes."""

    def __init__(self, root: str, listing_ttl_s: float = 60.0):
        self.root = root
        self.listing_ttl_s = listing_ttl_s
        self._listing: set[str] | None = None
        self._listed_at = -1e9
        os.makedirs(root, exist_ok=True)

    def _names(self) -> set[str]:
        if self._listing is None or time.monotonic() - self._listed_at > self.listing_ttl_s:
            self._listing = set(os.listdir(self.root))
            self._listed_at = time.monotonic()
        return self._listing

    def contains(self, key: str) -> bool:
        return f"{key}.npy" in self._names()

    def publish(self, key: str, coeffs: np.ndarray) -> None:
        np.save(os.path.join(self.root, f"{key}.npy"), coeffs)
        self._names().add(f"{key}.npy")

    def load(self, key: str) -> np.ndarray:
        return np.load(os.path.join(self.root, f"{key}.npy"))


def generate_kernel(viscosity: float) -> np.ndarray:
    """Stand-in for the expensive symbolic -> C code generation of the Stokes operator."""
    return np.array([-viscosity, 2.0 * viscosity + 1.0, -viscosity], np.float32)


@jax.jit
def jacobi_sweeps(u, rhs, coeffs):
    def body(_, u):
        left = jnp.roll(u, 1).at[0].set(0.0)
        right = jnp.roll(u, -1).at[-1].set(0.0)
        return (rhs - coeffs[0] * left - coeffs[2] * right) / coeffs[1]
    u = jax.lax.fori_loop(0, 20, body, u)
    return u, jnp.sqrt(jnp.sum(u * u))


class StokesSolver:
    def __init__(self, disk: DiskKernelCache):
        self.disk = disk
        self._modules: dict[str, np.ndarray] = {}

    def _kernel(self, viscosity: float) -> np.ndarray:
        key = hashlib.sha1(f"stokes:{viscosity:.6f}".encode()).hexdigest()[:16]
        module = self._modules.get(key)
        if module is None and self.disk.contains(key):
            module = self.disk.load(key)
        missing = np.int32(module is None)
        needs_compile = bool(np.any(multihost_utils.process_allgather(missing)))
        if needs_compile:
            if jax.process_index() == 0:
                self.disk.publish(key, generate_kernel(viscosity))
            multihost_utils.sync_global_devices(f"uw_jit_compile_{key}")
            module = self.disk.load(key)
        self._modules[key] = module
        return module

    def solve(self, viscosity: float, rhs) -> float:
        coeffs = jnp.asarray(self._kernel(viscosity))
        u = jax.make_array_from_process_local_data(CELLS, np.zeros((4,), np.float32))
        u, norm = jacobi_sweeps(u, rhs, coeffs)
        return float(norm)


disk = DiskKernelCache(CACHE_ROOT)
rhs = jax.make_array_from_process_local_data(CELLS, np.full((4,), 1.0 + jax.process_index(), np.float32))
norms = []
for picard_iteration in range(3):
    solver = StokesSolver(disk)          # a fresh solver per nonlinear iteration
    for viscosity in (1.0, 0.5):
        norms.append(round(solver.solve(viscosity, rhs), 5))

print("RESULT norms", norms)

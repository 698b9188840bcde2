# RAJAPerf-style suite setup (JAX port): the output directory is created by rank 0 while the other
# ranks wait at a barrier; then every kernel runs and its checksum is reduced over ranks.
# Source: https://github.com/llnl/RAJAPerf/pull/243
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("ranks",))


def recursive_mkdir(in_path: str) -> str:
    """Recursively create directories for the given path; returns the path or '' on failure."""
    rank = jax.process_index()
    # Processes wait for rank 0 to make the directories before proceeding
    if rank != 0:
        multihost_utils.sync_global_devices("recursive_mkdir")

    path = in_path
    # remove leading "." or "./"
    if path.startswith("./"):
        path = path[2:]
    elif path.startswith("."):
        path = ""
    if not path:
        return ""

    outpath = path
    if rank == 0:
        try:
            os.makedirs(os.path.join(tempfile.gettempdir(), path), exist_ok=True)
        except OSError:
            outpath = ""
    # Rank 0 lets the other processes know it made the directories
    if rank == 0:
        multihost_utils.sync_global_devices("recursive_mkdir")
    return outpath


@dataclasses.dataclass
class RunParams:
    outdir: str = "."
    npasses: int = 2
    size: int = 64


class KernelBase:
    name = "base"

    def __init__(self, params):
        self.params = params
        self._checksum = jax.jit(lambda x: jnp.sum(x), out_shardings=NamedSharding(MESH, P()))

    def run(self, x):
        raise NotImplementedError

    def checksum(self, local):
        arr = jax.make_array_from_process_local_data(NamedSharding(MESH, P("ranks")), local)
        return float(self._checksum(arr))


class DAXPY(KernelBase):
    name = "Basic_DAXPY"

    def run(self, x):
        return 2.5 * x + 1.0


class PI_REDUCE(KernelBase):
    name = "Basic_PI_REDUCE"

    def run(self, x):
        dx = 1.0 / x.size
        return 4.0 / (1.0 + ((x + 0.5) * dx) ** 2) * dx


class Executor:
    def __init__(self, params):
        self.params = params
        self.kernels = [DAXPY(params), PI_REDUCE(params)]

    def setup_suite(self):
        self.outdir = recursive_mkdir(self.params.outdir)

    def run_suite(self):
        base = np.arange(self.params.size, dtype=np.float32) + jax.process_index() * self.params.size
        results = {}
        for kernel in self.kernels:
            for _ in range(self.params.npasses):
                results[kernel.name] = kernel.checksum(np.asarray(kernel.run(base), np.float32))
        return results


def main():
    executor = Executor(RunParams(outdir="."))
    executor.setup_suite()
    results = executor.run_suite()
    for name, value in results.items():
        print(f"RESULT {name} {value:.6f}")
    print(f"RESULT outdir {executor.outdir!r}")


if __name__ == "__main__":
    main()

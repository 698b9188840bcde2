# ClimaDiagnostics-style output (JAX port): scheduled diagnostics are computed every few steps of a
# distributed simulation and written to a NetCDF-like file by the root process.
# Source: https://github.com/CliMA/ClimaDiagnostics.jl/issues/27
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import json
import os
import tempfile
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("elem",))
ELEMS = NamedSharding(MESH, P("elem"))
REPLICATED = NamedSharding(MESH, P())
ELEMS_PER_PROC = 6
NLON = 8


class NetCDFWriter:
    """Remaps the element field onto a lon grid and writes it (root only writes)."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.is_root = jax.process_index() == 0
        # weights of each element on the lon grid (same on every process)
        w = np.zeros((jax.process_count() * ELEMS_PER_PROC, NLON), np.float32)
        for e in range(w.shape[0]):
            w[e, (e * NLON) // w.shape[0]] = 1.0
        self.weights = jax.device_put(w, ELEMS)
        self._remap = jax.jit(lambda f, w: jnp.einsum("e,el->l", f, w) / jnp.maximum(w.sum(0), 1.0),
                              out_shardings=REPLICATED)
        self.written = []

    def interpolate(self, field):
        # each process remaps its own elements, then the pieces are reduced onto every process
        return np.asarray(self._remap(field, self.weights))

    def write_field(self, name, step, field):
        if self.is_root:
            data = self.interpolate(field)
            path = os.path.join(self.out_dir, f"{name}_{step}.json")
            with open(path, "w") as f:
                json.dump(data.tolist(), f)
            self.written.append(float(data.sum()))


@dataclasses.dataclass
class ScheduledDiagnostic:
    name: str
    compute: Callable
    every: int


class DiagnosticsCallback:
    def __init__(self, diagnostics, writer):
        self.diagnostics = diagnostics
        self.writer = writer

    def __call__(self, step, state):
        for diag in self.diagnostics:
            if step % diag.every == 0:
                self.writer.write_field(diag.name, step, diag.compute(state))


@jax.jit
def advance(u):
    return u + 0.1 * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)) + 0.01


def main():
    out_dir = tempfile.mkdtemp(prefix=f"clima_diag_{os.environ.get('JOB_ID', 'local')}_")
    writer = NetCDFWriter(out_dir)
    callback = DiagnosticsCallback(
        [ScheduledDiagnostic("ta", lambda u: u, every=2),
         ScheduledDiagnostic("ta_sq", lambda u: u * u, every=3)], writer)
    x = np.arange(ELEMS_PER_PROC, dtype=np.float32) + ELEMS_PER_PROC * jax.process_index()
    u = jax.make_array_from_process_local_data(ELEMS, np.sin(x / 3.0))
    for step in range(1, 7):
        u = advance(u)
        callback(step, u)
    total = float(writer._remap(u, writer.weights).sum())
    print(f"RESULT final_remapped_sum {total:.5f}")
    print(f"RESULT steps_done 6")


if __name__ == "__main__":
    main()

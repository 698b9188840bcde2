# The solution writer merges the auxiliary field names over processes, so every process packs the same columns
# Source: https://github.com/PyFR/PyFR/pull/552
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BASE_FIELDS = ["rho", "rhou", "E"]
AUX_REGISTRY = ["shock_sensor", "entropy"]  # every auxiliary field a plugin may attach, in a fixed order
NELEM_LOCAL, NSTEPS, DT = 6, 5, 0.02


def local_mesh():
    x = (np.arange(NELEM_LOCAL) + NELEM_LOCAL * jax.process_index()) / (NELEM_LOCAL * jax.process_count())
    rho = np.where(x < 0.25, 1.0, 0.125).astype(np.float32)  # Sod tube: the shock region lies on process 0
    return np.stack([rho, np.zeros_like(rho), rho / 0.4], axis=1)


@jax.jit
def rhs_step(u, diff_op):
    flux = diff_op @ u  # central difference: neighbours cross the process boundary
    return u - 0.5 * DT * flux


def shock_sensor(u):
    jump = np.abs(np.diff(u[:, 0], append=u[-1, 0]))
    return jump if np.any(jump > 0.1) else None  # attached only where this process sees a discontinuity


class NativeWriter:
    def __init__(self, aux_fields):
        self.aux_fields = aux_fields  # name -> per-element values on this process
        have = np.array([name in aux_fields for name in AUX_REGISTRY])
        merged = np.any(multihost_utils.process_allgather(have), axis=0)  # union over processes
        self.fields = BASE_FIELDS + [n for n, m in zip(AUX_REGISTRY, merged) if m]

    def pack(self, u_local):
        cols = [u_local[:, i] for i in range(len(BASE_FIELDS))]
        cols += [self.aux_fields.get(name, np.zeros(len(u_local))) for name in self.fields[len(BASE_FIELDS):]]
        return np.stack(cols, axis=1).astype(np.float32)

    def write(self, u_local):
        packed = self.pack(u_local)
        return np.asarray(multihost_utils.process_allgather(packed, tiled=True))  # rows of every process


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("elem",))
    elem = NamedSharding(mesh, P("elem"))
    u = jax.make_array_from_process_local_data(elem, local_mesh().astype(np.float32))
    n = NELEM_LOCAL * jax.process_count()
    diff_op = jax.device_put((np.eye(n, k=1) - np.eye(n, k=-1)).astype(np.float32), NamedSharding(mesh, P()))
    for _ in range(NSTEPS):
        u = rhs_step(u, diff_op)
    u_local = np.asarray(u.addressable_data(0))
    aux = {}
    sensor = shock_sensor(u_local)
    if sensor is not None:
        aux["shock_sensor"] = sensor
    writer = NativeWriter(aux)
    table = writer.write(u_local)
    print("RESULT fields", writer.fields)
    print("RESULT table_shape", list(table.shape))
    print("RESULT mass", round(float(table[:, 0].sum()), 5))


main()

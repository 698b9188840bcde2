# Peridynamic explicit dynamics: the NaN check on the displacement raises on the rank whose own nodes went NaN
# Source: https://github.com/peridigm/peridigm/issues/148
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_LOCAL, N_STEPS, DT, STIFFNESS = 8, 6, 0.05, 50.0


class NaNError(RuntimeError):
    pass


def reference_nodes(rank):
    x = np.linspace(0.0, 1.0, 2 * N_LOCAL, dtype=np.float32)[rank * N_LOCAL:(rank + 1) * N_LOCAL].copy()
    if rank == 1:
        x[5] = x[4]  # the mesh generator emitted a duplicate node in rank 1's block
    return x


def local_forces(x_ref, u):
    """Bond-based forces between consecutive owned nodes (stretch = elongation / reference length)."""
    length0 = np.diff(x_ref)
    length = np.diff(x_ref + u)
    with np.errstate(divide="ignore", invalid="ignore"):
        stretch = (length - length0) / length0
    f = np.zeros_like(u)
    f[:-1] += STIFFNESS * stretch
    f[1:] -= STIFFNESS * stretch
    return f


@jax.jit
def kinetic_energy(v):
    return 0.5 * jnp.sum(jnp.where(jnp.isfinite(v), v, 0.0) ** 2)


def check_for_nan(u, step):
    if not np.all(np.isfinite(u)):
        raise NaNError(f"NaN in displacement at step {step}")


def run(mesh):
    rank = jax.process_index()
    sharding = NamedSharding(mesh, P("nodes"))
    x_ref = reference_nodes(rank)
    u = np.zeros(N_LOCAL, np.float32)
    v = np.where(np.arange(N_LOCAL) % 2 == 0, 0.1, -0.1).astype(np.float32)
    energies = []
    for step in range(N_STEPS):
        v = v + DT * local_forces(x_ref, u)
        u = u + DT * v
        check_for_nan(u, step)
        ke = kinetic_energy(jax.make_array_from_process_local_data(sharding, v))
        energies.append(round(float(ke), 5))
    return energies


def main():
    mesh = Mesh(np.array(jax.devices()), ("nodes",))
    try:
        energies = run(mesh)
        print("RESULT energies", energies)
    except NaNError as err:
        print("RESULT aborted", str(err))


if __name__ == "__main__":
    main()

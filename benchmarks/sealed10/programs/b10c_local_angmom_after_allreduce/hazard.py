# Angular momentum is all-reduced, but the correction keeps using this process's partial sum
# Source: https://github.com/lammps/lammps/pull/166
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
MESH = jax.make_mesh((jax.device_count(),), ("procs",), axis_types=(jax.sharding.AxisType.Auto,))
_SUM = jax.jit(lambda a: a.sum(axis=0), out_shardings=NamedSharding(MESH, P()))


def allreduce_sum(local):
    """MPI_Allreduce(SUM) of a small per-process vector, through a global array."""
    local = np.asarray(local, np.float64).astype(np.float32).reshape(1, -1)
    arr = jax.make_array_from_process_local_data(NamedSharding(MESH, P("procs", None)), local)
    return np.asarray(_SUM(arr).addressable_data(0)).astype(np.float64)


class Atoms:
    """The atoms owned by this process (a spatial sub-domain)."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.x = rng.uniform(0.0, 5.0, size=(n, 3)) + 5.0 * jax.process_index()
        self.v = rng.normal(0.0, 1.0, size=(n, 3))
        self.m = rng.uniform(1.0, 2.0, size=(n,))


class FixMomentumAngular:
    """Zero the total angular momentum of the group every `every` steps (like fix momentum ... angular)."""

    def __init__(self, every=1):
        self.every = every

    def apply(self, atoms):
        masstotal = allreduce_sum([atoms.m.sum()])[0]
        xcm = allreduce_sum((atoms.m[:, None] * atoms.x).sum(axis=0)) / masstotal
        dx = atoms.x - xcm
        angmom = (atoms.m[:, None] * np.cross(dx, atoms.v)).sum(axis=0)
        angmomall = allreduce_sum(angmom)
        r2 = (dx ** 2).sum(axis=1)
        inertia = (atoms.m[:, None, None] * (r2[:, None, None] * np.eye(3) - dx[:, :, None] * dx[:, None, :])).sum(0)
        inertiaall = allreduce_sum(inertia.ravel()).reshape(3, 3)
        omega = np.linalg.solve(inertiaall, angmom)
        atoms.v = atoms.v - np.cross(omega, dx)
        return omega, angmomall


def total_angmom(atoms):
    masstotal = allreduce_sum([atoms.m.sum()])[0]
    xcm = allreduce_sum((atoms.m[:, None] * atoms.x).sum(axis=0)) / masstotal
    return allreduce_sum((atoms.m[:, None] * np.cross(atoms.x - xcm, atoms.v)).sum(axis=0))


def main():
    atoms = Atoms(n=20, seed=7 + jax.process_index())
    fix = FixMomentumAngular()
    omega, before = fix.apply(atoms)
    after = total_angmom(atoms)
    print("RESULT omega", np.round(omega, 3).tolist())
    print(f"RESULT L_before {np.linalg.norm(before):.3f}")
    print(f"RESULT L_after_small {bool(np.linalg.norm(after) < 1e-2 * np.linalg.norm(before))}")


main()

# FOCUS-style coil optimisation setup: the input namelist gives the surface resolution
# (Nteta, Nzeta); the master process reads the plasma boundary from the surface file, whose own
# resolution overrides the namelist, and broadcasts the boundary to the other processes. Every
# process then evaluates the normal field of the coil set on its share of the surface points.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MASTER = 0
NAMELIST = {"Nteta": 8, "Nzeta": 6, "Ncoils": 4, "case_surface": 1}


def stage_surface_file(workdir, nteta=10, nzeta=4):
    """The boundary file shipped with the case (written here so the example is self-contained)."""
    path = os.path.join(workdir, "plasma.boundary.npz")
    theta = np.linspace(0, 2 * np.pi, nteta, endpoint=False)[:, None]
    zeta = np.linspace(0, 2 * np.pi, nzeta, endpoint=False)[None, :]
    xsurf = (3.0 + np.cos(theta)) * np.cos(zeta)
    zsurf = np.sin(theta) * np.ones_like(zeta)
    np.savez(path, Nteta=nteta, Nzeta=nzeta, xsurf=xsurf, zsurf=zsurf)
    return path


class Surface:
    def __init__(self, nteta, nzeta):
        self.Nteta, self.Nzeta = nteta, nzeta
        self.xsurf = np.zeros((nteta, nzeta))
        self.zsurf = np.zeros((nteta, nzeta))


def surfsep(myid, workdir):
    surf = Surface(NAMELIST["Nteta"], NAMELIST["Nzeta"])
    if myid == MASTER:
        data = np.load(stage_surface_file(workdir))
        surf.Nteta, surf.Nzeta = int(data["Nteta"]), int(data["Nzeta"])  # file overrides namelist
        surf.xsurf, surf.zsurf = data["xsurf"], data["zsurf"]
    dims = np.asarray(multihost_utils.broadcast_one_to_all(np.array([surf.Nteta, surf.Nzeta], np.int32)))
    if myid != MASTER:
        surf = Surface(int(dims[0]), int(dims[1]))
    surf.xsurf = np.asarray(multihost_utils.broadcast_one_to_all(surf.xsurf))
    surf.zsurf = np.asarray(multihost_utils.broadcast_one_to_all(surf.zsurf))
    return surf


@jax.jit
def normal_field(coil_x, coil_i, px, pz):
    dx = px[:, None] - coil_x[None, :]
    r2 = dx ** 2 + pz[:, None] ** 2 + 0.1
    return jnp.sum(coil_i[None, :] * dx / r2, axis=1)


def bnormal_cost(surf, myid, ncpu):
    coil_x = jnp.linspace(2.0, 4.0, NAMELIST["Ncoils"])
    coil_i = jnp.ones(NAMELIST["Ncoils"])
    px, pz = surf.xsurf.ravel(), surf.zsurf.ravel()
    mine = slice(myid, None, ncpu)
    bn = normal_field(coil_x, coil_i, px[mine], pz[mine])
    local = np.float64(np.sum(np.asarray(bn) ** 2))
    return float(np.asarray(multihost_utils.process_allgather(local)).sum()) / px.size


def main():
    myid, ncpu = jax.process_index(), jax.process_count()
    workdir = os.path.join(tempfile.gettempdir(), f"focus_{os.environ.get('JOB_ID', 'run')}")
    os.makedirs(workdir, exist_ok=True)
    surf = surfsep(myid, workdir)
    print(f"process {myid}: surface {surf.Nteta} x {surf.Nzeta}")
    cost = bnormal_cost(surf, myid, ncpu)
    print("RESULT surface_points", surf.xsurf.size)
    print("RESULT bnorm", round(cost, 6))


if __name__ == "__main__":
    main()

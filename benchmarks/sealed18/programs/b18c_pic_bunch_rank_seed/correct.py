# PIC setup: electron bunch initialised from a numpy array in the namelist, charge deposited on a slab-decomposed grid
# Source: https://github.com/SmileiPIC/Smilei/issues/562
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

smilei_mpi_rank = jax.process_index()
smilei_mpi_size = jax.process_count()

# ----------------------------------------------------------------- namelist (executed by every rank)
Main = dict(
    geometry="2Dcartesian",
    cell_length=[0.25, 0.25],
    grid_length=[64.0, 16.0],
    timestep=0.2,
    random_seed=0,
)
npart = 2000
bunch_center, bunch_sigma = np.array([32.0, 8.0]), np.array([6.0, 2.0])
rng = np.random.default_rng(Main["random_seed"])
array_position = np.empty((3, npart))
array_position[0:2] = bunch_center[:, None] + bunch_sigma[:, None] * rng.standard_normal((2, npart))
array_position[2] = 1.0 / npart  # macro-particle weight
array_momentum = np.zeros((3, npart))
array_momentum[0] = 100.0 + 5.0 * rng.standard_normal(npart)
Laser = dict(box_side="xmin", a0=5.0, focus=[float(array_position[0].mean()), float(array_position[1].mean())])
# --------------------------------------------------------------------------------------------------


class Patch:
    def __init__(self, rank, size):
        nx = int(Main["grid_length"][0] / Main["cell_length"][0])
        self.nx_local = nx // size
        self.x_min = rank * self.nx_local * Main["cell_length"][0]
        self.x_max = self.x_min + self.nx_local * Main["cell_length"][0]
        self.ny = int(Main["grid_length"][1] / Main["cell_length"][1])


def create_species(patch, position, momentum):
    """Keep the particles of the namelist array that fall inside this rank's patch."""
    inside = (position[0] >= patch.x_min) & (position[0] < patch.x_max) & \
             (position[1] >= 0) & (position[1] < Main["grid_length"][1])
    return position[:, inside], momentum[:, inside]


def deposit_charge(patch, position):
    dx, dy = Main["cell_length"]
    ix = np.clip(((position[0] - patch.x_min) / dx).astype(int), 0, patch.nx_local - 1)
    iy = np.clip((position[1] / dy).astype(int), 0, patch.ny - 1)
    rho = np.zeros((patch.nx_local, patch.ny), np.float32)
    np.add.at(rho, (ix, iy), position[2])
    return rho


@jax.jit
def field_diagnostics(rho):
    total = jnp.sum(rho)
    x = jnp.arange(rho.shape[0], dtype=jnp.float32)[:, None] * Main["cell_length"][0]
    return total, jnp.sum(rho * x) / total


def main():
    mesh = Mesh(np.array(jax.devices()), ("x",))
    patch = Patch(smilei_mpi_rank, smilei_mpi_size)
    position, momentum = create_species(patch, array_position, array_momentum)
    rho_local = deposit_charge(patch, position)
    rho = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), rho_local)
    total, centroid = field_diagnostics(rho)
    n_loaded = round(float(total) * npart)
    print("RESULT laser_focus", [round(v, 3) for v in Laser["focus"]])
    print("RESULT particles_loaded", n_loaded, "of", npart)
    print("RESULT charge_centroid_x", round(float(centroid), 3))


if __name__ == "__main__":
    main()

import datetime
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

GLOBAL_NDV = -9999.0
NY, NX = 8, 6


class MpiConfig:
    def __init__(self):
        self.rank = jax.process_index()
        self.size = jax.process_count()

    def broadcast_parameter(self, value):
        return np.asarray(multihost_utils.broadcast_one_to_all(np.asarray(value)))

    def scatter_array(self, global_grid):
        """Rank 0 holds the full grid; every rank receives its row slab."""
        full = self.broadcast_parameter(global_grid)
        rows = NY // self.size
        return full[self.rank * rows:(self.rank + 1) * rows].copy()


class InputForcings:
    def __init__(self, input_dir):
        self.input_dir = input_dir
        self.file_in2 = None
        self.enforce = 0
        self.regridded_forcings2 = None


def stage_rap_archive(input_dir, cycles):
    """Stand-in for the RAP archive on the shared file system: hourly bgrb files, one hour only as pgrb."""
    os.makedirs(input_dir, exist_ok=True)
    for i, cycle in enumerate(cycles):
        kind = "pgrb" if i == 2 else "bgrb"
        path = os.path.join(input_dir, f"rap.t{cycle:%H}z.awp130{kind}f01.grib2.npy")
        tmp = f"{path}.{os.getpid()}"
        np.save(tmp, np.full((NY, NX), 270.0 + i, np.float32))
        os.replace(tmp + ".npy" if not tmp.endswith(".npy") else tmp, path)


def find_conus_rap_neighbors(input_forcings, d_current, mpi_config):
    input_forcings.file_in2 = os.path.join(
        input_forcings.input_dir, f"rap.t{d_current:%H}z.awp130bgrbf01.grib2.npy")

    # Ensure we have the necessary new file
    if not os.path.isfile(input_forcings.file_in2):
        # look for the `pgrb` equivalent:
        input_forcings.file_in2 = input_forcings.file_in2.replace("bgrb", "pgrb")
        if mpi_config.rank == 0:
            if not os.path.isfile(input_forcings.file_in2):
                print(f"Expected input RAP file {input_forcings.file_in2} not found, will not be used")
            else:
                print(f"bgrb missing; {os.path.basename(input_forcings.file_in2)} will be used instead")

    # If the file is missing, set the local slab of arrays to missing.
    if not os.path.isfile(input_forcings.file_in2):
        if input_forcings.regridded_forcings2 is not None:
            input_forcings.regridded_forcings2[:, :] = GLOBAL_NDV


def regrid_conus_rap(input_forcings, mpi_config):
    if not os.path.isfile(input_forcings.file_in2):
        return
    grid = np.load(input_forcings.file_in2) if mpi_config.rank == 0 else np.zeros((NY, NX), np.float32)
    input_forcings.regridded_forcings2 = mpi_config.scatter_array(grid)


def main():
    mpi_config = MpiConfig()
    start = datetime.datetime(2022, 2, 24, 0)
    cycles = [start + datetime.timedelta(hours=h) for h in range(4)]
    input_dir = os.path.join(tempfile.gettempdir(), f"rap_{os.environ.get('JOB_ID', 'local')}")
    stage_rap_archive(input_dir, cycles)
    multihost_utils.sync_global_devices("archive staged")

    forcing = InputForcings(input_dir)
    means = []
    for d_current in cycles:
        find_conus_rap_neighbors(forcing, d_current, mpi_config)
        regrid_conus_rap(forcing, mpi_config)
        slab = forcing.regridded_forcings2
        local = np.array([np.where(slab == GLOBAL_NDV, 0.0, slab).sum(), (slab != GLOBAL_NDV).sum()])
        tot = np.asarray(multihost_utils.process_allgather(local)).sum(0)
        means.append(round(float(tot[0] / max(tot[1], 1)), 3))
    print("RESULT hourly_mean_T2D", means)


if __name__ == "__main__":
    main()

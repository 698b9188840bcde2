# Initial temperature for a spherical-shell mantle convection model (ASPECT's S40RTS perturbation):
# rank 0 reads the tomography data files and broadcasts their content; every process then evaluates
# the perturbation on its own radial slab and the global statistics are reduced over all processes.
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DATA_DIR = os.path.join(tempfile.gettempdir(), f"aspect-data-{os.environ.get('JOB_ID', 'local')}")
PARAMETERS = {
    "Data directory": DATA_DIR,
    "Initial condition file name": "S40RTS_user.sph",
    "Spline knots depth file name": "Spline_knots.txt",
    "Vs to density scaling": 0.25,
    "Reference temperature": 1600.0,
}
DEFAULT_COEFFICIENTS = np.array([0.0, 0.012, -0.008, 0.004, 0.002, -0.001])


def install_model_data():
    os.makedirs(DATA_DIR, exist_ok=True)
    knots = np.linspace(-1.0, 1.0, 21)
    with open(os.path.join(DATA_DIR, "Spline_knots.txt"), "w") as f:
        f.write("# spline knots (normalized depth)\n" + "\n".join(f"{k:.4f}" for k in knots) + "\n")


def read_and_distribute_file_content(filename):
    """Rank 0 reads the file and broadcasts its size and bytes to the other processes."""
    data, filesize = None, np.int32(0)
    if jax.process_index() == 0:
        try:
            with open(filename, "rb") as filestream:
                data = np.frombuffer(filestream.read(), dtype=np.uint8)
            filesize = np.int32(data.size)
        except OSError:
            filesize = np.int32(-1)
    filesize = int(multihost_utils.broadcast_one_to_all(filesize))
    if filesize < 0:
        raise OSError(f"Could not open file <{filename}>.")
    buffer = data if data is not None else np.zeros(filesize, dtype=np.uint8)
    buffer = np.asarray(multihost_utils.broadcast_one_to_all(buffer))
    return bytes(buffer.astype(np.uint8)).decode()


def parse_numbers(text):
    return np.array([float(tok) for line in text.splitlines() if not line.startswith("#")
                     for tok in line.split()])


class S40RTSPerturbation:
    def initialize(self, prm):
        data_dir = prm["Data directory"]
        try:
            self.coefficients = parse_numbers(read_and_distribute_file_content(
                os.path.join(data_dir, prm["Initial condition file name"])))
        except OSError:
            if jax.process_index() == 0:
                print("S40RTS: user coefficient file not readable, using the built-in model")
            self.coefficients = DEFAULT_COEFFICIENTS
        self.knots = parse_numbers(read_and_distribute_file_content(
            os.path.join(data_dir, prm["Spline knots depth file name"])))
        self.scaling = prm["Vs to density scaling"]
        self.t0 = prm["Reference temperature"]

    def temperature(self, depth, colatitude):
        x = np.cos(colatitude)
        legendre = np.polynomial.legendre.legval(x, self.coefficients)
        spline = np.interp(2.0 * depth - 1.0, self.knots, np.sin(np.pi * self.knots))
        return self.t0 * (1.0 - self.scaling * legendre * spline)


def main():
    if jax.process_index() == 0:
        install_model_data()
    multihost_utils.sync_global_devices("model data installed")
    model = S40RTSPerturbation()
    model.initialize(PARAMETERS)

    rank, size = jax.process_index(), jax.process_count()
    depths = np.array_split(np.linspace(0.0, 1.0, 32), size)[rank]
    colat = np.linspace(0.0, np.pi, 24)
    local = model.temperature(depths[:, None], colat[None, :]).astype(np.float32)
    sums = np.asarray(multihost_utils.process_allgather(np.array([local.sum(), local.size, local.max()],
                                                                  dtype=np.float32)))
    print("RESULT mean_temperature", round(float(sums[:, 0].sum() / sums[:, 1].sum()), 3))
    print("RESULT max_temperature", round(float(sums[:, 2].max()), 3))
    print("RESULT num_knots", model.knots.size)


if __name__ == "__main__":
    main()

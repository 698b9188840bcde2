# PIC laser reader: the IO process reads a txye file header and broadcasts the uniform-grid flag with the sizes
# Source: https://github.com/BLAST-WarpX/warpx/pull/3941
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"nt": 16, "nx": 8, "ny": 6, "t_max": 2.0, "x_max": 1.0, "y_max": 1.0}
IO_RANK = 0
WORK = os.path.join(tempfile.gettempdir(), "mcjax_sealed14_txye_header", os.environ.get("JOB_ID", "local"))


def write_txye(path):
    """Uniform-grid txye file: flag, sizes, coordinate bounds, then E(t, x, y)."""
    t = np.linspace(0.0, CFG["t_max"], CFG["nt"])
    x = np.linspace(-CFG["x_max"], CFG["x_max"], CFG["nx"])
    y = np.linspace(-CFG["y_max"], CFG["y_max"], CFG["ny"])
    tt, xx, yy = np.meshgrid(t, x, y, indexing="ij")
    e = np.exp(-(xx ** 2 + yy ** 2) / 0.3) * np.sin(6.0 * tt) * np.exp(-((tt - 1.0) / 0.5) ** 2)
    with open(path, "wb") as f:
        np.array([1], np.uint8).tofile(f)
        np.array([CFG["nt"], CFG["nx"], CFG["ny"]], np.int32).tofile(f)
        np.array([0.0, CFG["t_max"], -CFG["x_max"], CFG["x_max"], -CFG["y_max"], CFG["y_max"]], np.float32).tofile(f)
        e.astype(np.float32).tofile(f)


class TxyeReader:
    def __init__(self, path):
        self.path = path
        self.uniform = False
        self.dims = np.zeros(3, np.int32)

    def parse_header(self):
        if jax.process_index() == IO_RANK:
            with open(self.path, "rb") as f:
                self.uniform = bool(np.fromfile(f, np.uint8, 1)[0])
                self.dims = np.fromfile(f, np.int32, 3)
        header = np.append(self.dims, np.int32(self.uniform)).astype(np.int32)
        header = np.asarray(multihost_utils.broadcast_one_to_all(header))
        self.dims, self.uniform = header[:3], bool(header[3])

    def read_coords(self):
        nt, nx, ny = (int(d) for d in self.dims)
        n = 6 if self.uniform else nt + nx + ny
        buf = np.zeros(n, np.float32)
        if jax.process_index() == IO_RANK:
            with open(self.path, "rb") as f:
                f.seek(1 + 3 * 4)
                buf = np.fromfile(f, np.float32, n)
        buf = np.asarray(multihost_utils.broadcast_one_to_all(buf))
        if self.uniform:
            return (np.linspace(buf[0], buf[1], nt), np.linspace(buf[2], buf[3], nx), np.linspace(buf[4], buf[5], ny))
        return buf[:nt], buf[nt:nt + nx], buf[nt + nx:]

    def read_field(self):
        nt, nx, ny = (int(d) for d in self.dims)
        n_coord = 6 if self.uniform else nt + nx + ny
        e = np.zeros((nt, nx, ny), np.float32)
        if jax.process_index() == IO_RANK:
            with open(self.path, "rb") as f:
                f.seek(1 + 3 * 4 + 4 * n_coord)
                e = np.fromfile(f, np.float32, nt * nx * ny).reshape(nt, nx, ny)
        return np.asarray(multihost_utils.broadcast_one_to_all(e))


def main():
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "laser.txye")
    if jax.process_index() == IO_RANK:
        write_txye(path)
    multihost_utils.sync_global_devices("txye_written")
    reader = TxyeReader(path)
    reader.parse_header()
    t, x, y = reader.read_coords()
    e = reader.read_field()
    peak_t = float(t[int(np.argmax(np.abs(e).max(axis=(1, 2))))])
    print("RESULT dims", [int(d) for d in reader.dims], "dt", round(float(t[1] - t[0]), 6))
    print("RESULT peak_time", round(peak_t, 6), "energy", round(float(np.sum(e.astype(np.float64) ** 2)), 5))


main()

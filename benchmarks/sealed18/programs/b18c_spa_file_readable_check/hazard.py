# Prescribed-aerosol (SPA) data interpolation: time-slice database setup with a static climatology fallback
# Source: https://github.com/E3SM-Project/E3SM/pull/8565
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NCOL_LOCAL = 256
NLEV = 72
MONTHS = ("01", "02", "03")
DATA_DIR = os.path.join(tempfile.gettempdir(), "spa_inputs_" + os.environ.get("JOB_ID", "local"))


class FileNotReadable(RuntimeError):
    pass


def file_readable(fname):
    try:
        with open(fname, "rb") as f:
            return len(f.read(16)) == 16
    except OSError:
        return False


def stage_static_inputs(mesh):
    os.makedirs(DATA_DIR, exist_ok=True)
    if jax.process_index() == 0:
        clim = np.linspace(0.1, 1.0, NCOL_LOCAL * jax.process_count() * NLEV, dtype=np.float32)
        np.save(os.path.join(DATA_DIR, "spa_clim_static.npy"), clim.reshape(-1, NLEV))
    multihost_utils.sync_global_devices("spa static inputs staged")


def remap_monthly_slices():
    """Rank 0 remaps the source-grid monthly files onto the model grid for this run."""
    if jax.process_index() != 0:
        return
    ncol = NCOL_LOCAL * jax.process_count()
    nsrc = 16 * ncol
    src = np.random.default_rng(7).random((len(MONTHS), nsrc, NLEV))
    tgt_lat = np.linspace(-np.pi / 2, np.pi / 2, ncol)[:, None]
    src_lat = np.linspace(-np.pi / 2, np.pi / 2, nsrc)[None, :]
    weights = np.exp(-((np.sin(tgt_lat) - np.sin(src_lat)) / 0.01) ** 2)
    weights /= weights.sum(axis=1, keepdims=True)
    for m, month in enumerate(MONTHS):
        remapped = (weights @ src[m]).astype(np.float32)
        tmp = os.path.join(DATA_DIR, f"spa_remapped_{month}.npy.tmp")
        with open(tmp, "wb") as f:
            np.save(f, remapped)
        os.replace(tmp, os.path.join(DATA_DIR, f"spa_remapped_{month}.npy"))


def register_file(fname, mesh):
    """Collective open: every process reads the header, the shapes are agreed on, then each reads its columns."""
    data = np.load(fname, mmap_mode="r")
    shapes = multihost_utils.process_allgather(np.array(data.shape, np.int32))
    if not (shapes == shapes[0]).all():
        raise FileNotReadable(f"{fname}: inconsistent header across processes")
    start = jax.process_index() * NCOL_LOCAL
    local = np.ascontiguousarray(data[start:start + NCOL_LOCAL])
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("ncol")), local)


def setup_time_database(input_files, mesh):
    slices = []
    for fname in input_files:
        if not file_readable(fname):
            raise FileNotReadable(f"Error! Input file {fname} is not readable.")
        slices.append(register_file(fname, mesh))
    return slices


def setup_static_database(mesh):
    return [register_file(os.path.join(DATA_DIR, "spa_clim_static.npy"), mesh)]


@jax.jit
def interpolate(slices, alpha):
    beg, end = slices[0], slices[-1]
    return (1.0 - alpha) * beg + alpha * end


@jax.jit
def column_burden(field):
    return jnp.sum(field, axis=1).mean()


def main():
    mesh = Mesh(np.array(jax.devices()), ("ncol",))
    stage_static_inputs(mesh)
    remap_monthly_slices()
    input_files = [os.path.join(DATA_DIR, f"spa_remapped_{m}.npy") for m in MONTHS]
    try:
        slices = setup_time_database(input_files, mesh)
        mode = "time_interpolated"
    except FileNotReadable as err:
        print("WARNING:", err, "- falling back to static SPA climatology", flush=True)
        slices = setup_static_database(mesh)
        mode = "static"
    field = interpolate(slices, jnp.float32(0.25))
    burden = column_burden(field)
    print("RESULT spa_mode", mode)
    print("RESULT spa_burden", round(float(burden), 4))


if __name__ == "__main__":
    main()

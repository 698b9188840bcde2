import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("split",))
SPLIT0 = NamedSharding(MESH, P("split"))
__NETCDF_DIM_TEMPLATE = "{}_dim_{}"


class Dataset:
    """Minimal serial netCDF-like container (one pickle per file)."""

    def __init__(self, path, mode):
        self.path, self.mode = path, mode
        self.dimensions, self.variables = {}, {}
        if mode in ("a", "r+") and os.path.exists(path):
            with open(path, "rb") as f:
                self.dimensions, self.variables = pickle.load(f)

    def createDimension(self, name, size):
        if name in self.dimensions:
            raise RuntimeError("NetCDF: String match to name in use")
        self.dimensions[name] = size

    def createVariable(self, name, dtype, dims):
        if name in self.variables:
            raise RuntimeError("NetCDF: String match to name in use")
        self.variables[name] = np.zeros([self.dimensions[d] for d in dims], dtype)
        return self.variables[name]

    def __getitem__(self, name):
        return self.variables[name]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            with open(self.path, "wb") as f:
                pickle.dump((self.dimensions, self.variables), f)


class Comm:
    rank, size = jax.process_index(), jax.process_count()

    def chunk(self, n):
        block = n // self.size
        return slice(self.rank * block, (self.rank + 1) * block)


def _bcast_object(obj, root):
    src = Comm.rank == root
    payload = np.frombuffer(pickle.dumps(obj), np.uint8) if src else np.zeros(0, np.uint8)
    size = int(multihost_utils.broadcast_one_to_all(np.int32(payload.size), is_source=src))
    buf = np.zeros(size, np.uint8)
    buf[:payload.size] = payload
    return pickle.loads(np.asarray(multihost_utils.broadcast_one_to_all(buf, is_source=src)).tobytes())


def save_netcdf(data, path, variable, mode="w"):
    comm = Comm()
    slices = comm.chunk(data.shape[0])
    local = np.asarray(data.addressable_shards[0].data)
    failed, excep = 0, None
    if comm.rank == 0:
        try:
            with Dataset(path, mode) as handle:
                dimension_names = []
                for dimension, elements in enumerate(data.shape):
                    name = __NETCDF_DIM_TEMPLATE.format(variable, dimension)
                    handle.createDimension(name, elements)
                    dimension_names.append(name)
                var = handle.createVariable(variable, local.dtype, tuple(dimension_names))
                var[slices] = local
        except Exception as e:
            failed, excep = 1, e
    # serialize the remaining writes: ping the next rank once the previous one is done
    for r in range(1, comm.size):
        failed = int(np.max(multihost_utils.process_allgather(np.int32(failed))))
        if comm.rank == r and not failed:
            try:
                with Dataset(path, "r+") as handle:
                    handle[variable][slices] = local
            except Exception as e:
                failed, excep = r + 1, e
    failed = int(np.max(multihost_utils.process_allgather(np.int32(failed))))
    if failed:
        excep = _bcast_object(excep, root=failed - 1)
        if failed - 1 != comm.rank:
            excep.args = "raised by process rank {}".format(failed - 1), *excep.args
        raise excep from None


@jax.jit
def annual_mean_anomaly(tas):
    return tas.mean(axis=1) - tas.mean()


def load_year(year, rank, days_per_rank=8, cells=12):
    rng = np.random.default_rng(year * 10 + rank)
    return (288.0 + rng.normal(size=(days_per_rank, cells))).astype(np.float32)


def main():
    comm = Comm()
    out = f"/tmp/tas_climatology_{os.environ.get('JOB_ID', 'run')}.nc"
    if comm.rank == 0:
        with Dataset(out, "w") as handle:   # left over from the previous, interrupted run
            handle.createDimension("tas_2000_dim_0", 16)
            handle.createVariable("tas_2000", np.float32, ("tas_2000_dim_0",))
    multihost_utils.sync_global_devices("restart file ready")
    written, skipped = [], []
    for year in (2000, 2001, 2002):
        tas = jax.make_array_from_process_local_data(SPLIT0, load_year(year, comm.rank))
        anomaly = annual_mean_anomaly(tas)
        try:
            save_netcdf(anomaly, out, f"tas_{year}", mode="a")
            written.append(year)
        except RuntimeError as e:
            print(f"rank {comm.rank}: year {year} already in {out} ({e}), skipping")
            skipped.append(year)
    with open(out, "rb") as f:
        _, variables = pickle.load(f)
    total = float(jnp.sum(multihost_utils.process_allgather(np.float32(len(written)))))
    print("RESULT written", written, "skipped", skipped, "total_written", total)
    print("RESULT variables", sorted(variables))
    print("RESULT tas_2002_sum", round(float(variables["tas_2002"].sum()), 3) if "tas_2002" in variables else None)


if __name__ == "__main__":
    main()

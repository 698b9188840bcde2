import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("proc",))
PER_PROC = NamedSharding(MESH, P("proc"))
_global_sum = jax.jit(jnp.sum)


def write_enzo_output(path, num_grids=6):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "DD0010"), "w") as f:
        f.write("InitialTime = 10.0\nAppendActiveParticleType = AccretingParticle\n")
    rng = np.random.default_rng(10)
    for g in range(num_grids):
        np.savez(os.path.join(path, f"DD0010.cpu{g:04d}.npz"),
                 io_mass=rng.uniform(1, 2, size=20 + g),
                 AccretingParticle_mass=rng.uniform(5, 10, size=g % 3))


class Communicator:
    rank, size = jax.process_index(), jax.process_count()

    def mpi_bcast(self, data):
        root = self.rank == 0
        payload = np.frombuffer(pickle.dumps(data), np.uint8) if root else np.zeros(0, np.uint8)
        size = int(multihost_utils.broadcast_one_to_all(np.int32(payload.size), is_source=root))
        buf = np.zeros(size, np.uint8)
        buf[:payload.size] = payload
        out = multihost_utils.broadcast_one_to_all(buf, is_source=root)
        return pickle.loads(np.asarray(out).tobytes())


class EnzoDataset:
    def __init__(self, path, comm, num_grids=6):
        self.path, self.comm, self.num_grids = path, comm, num_grids
        self.parameters = {}
        with open(os.path.join(path, "DD0010")) as f:
            for line in f:
                key, _, value = line.partition("=")
                self.parameters[key.strip()] = value.strip()
        self.particle_types = ("io",)
        self.particle_types_raw = ("io",)
        self.index = EnzoHierarchy(self)


class EnzoHierarchy:
    def __init__(self, ds):
        self.dataset, self.comm = ds, ds.comm
        self.grid_files = [os.path.join(ds.path, f"DD0010.cpu{g:04d}.npz") for g in range(ds.num_grids)]
        self._detect_output_fields()

    def _detect_active_particle_fields(self):
        aps = self.dataset.parameters["AppendActiveParticleType"].split()
        self.dataset.particle_types = self.dataset.particle_types + tuple(aps)
        self.dataset.particle_types_raw = self.dataset.particle_types_raw + tuple(aps)
        return [(apt, "particle_mass") for apt in aps]

    def _detect_output_fields(self):
        # Do this only on the root processor to save disk work.
        if self.comm.rank == 0:
            field_list = {("io", "particle_mass")}
            if "AppendActiveParticleType" in self.dataset.parameters:
                field_list |= set(self._detect_active_particle_fields())
            ptypes = self.dataset.particle_types
            ptypes_raw = self.dataset.particle_types_raw
        else:
            field_list = None
            ptypes = None
            ptypes_raw = None
        self.field_list = sorted(self.comm.mpi_bcast(field_list))
        self.dataset.particle_types = tuple(self.comm.mpi_bcast(ptypes))
        self.dataset.particle_types_raw = tuple(self.comm.mpi_bcast(ptypes_raw))

    def my_grids(self):
        return self.grid_files[self.comm.rank::self.comm.size]


def total_quantity(ds, ptype, field):
    local = 0.0
    for fn in ds.index.my_grids():
        with np.load(fn) as data:
            local += float(np.sum(data[f"{ptype}_mass"]))
    arr = jax.make_array_from_process_local_data(PER_PROC, np.array([local], np.float32))
    return float(_global_sum(arr))


def main():
    comm = Communicator()
    path = f"/tmp/enzo_{os.environ.get('JOB_ID', 'run')}"
    if comm.rank == 0:
        write_enzo_output(path)
    multihost_utils.sync_global_devices("enzo output written")
    ds = EnzoDataset(path, comm)
    print(f"rank {comm.rank}: particle types {ds.particle_types}")
    masses = {}
    for ptype in ds.particle_types:
        masses[ptype] = total_quantity(ds, ptype, "particle_mass")
    multihost_utils.sync_global_devices("analysis done")
    print("RESULT field_list", ds.index.field_list)
    for ptype, m in sorted(masses.items()):
        print(f"RESULT total_mass {ptype} {m:.4f}")


if __name__ == "__main__":
    main()

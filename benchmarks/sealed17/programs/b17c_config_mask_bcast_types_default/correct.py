# Halo finder config: rank 0 parses the parameter file and broadcasts the tracer bit mask; every rank rebuilds the type list from it
# Source: https://github.com/SWIFTSIM/HBT-HERONS/issues/17
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PARAM_TEXT = "SnapshotPath /data/colibre/L0025\nMinNumPartOfSub 20\nTracerParticleTypes 1\n"


class HBTConfig:
    def __init__(self):
        self.TracerParticleTypes = [1, 4]  # default: dark matter and stars
        self.MinNumPartOfSub = 20
        self.TracerParticleBitMask = 0

    def parse(self, path):
        for line in Path(path).read_text().splitlines():
            key, *vals = line.split()
            if key == "TracerParticleTypes":
                self.TracerParticleTypes = [int(v) for v in vals]
            elif key == "MinNumPartOfSub":
                self.MinNumPartOfSub = int(vals[0])
        self.TracerParticleBitMask = sum(1 << t for t in self.TracerParticleTypes)

    def broadcast(self):
        mask = multihost_utils.broadcast_one_to_all(np.int32(self.TracerParticleBitMask))
        self.TracerParticleBitMask = int(mask)
        self.TracerParticleTypes = [t for t in range(6) if self.TracerParticleBitMask >> t & 1]
        self.MinNumPartOfSub = int(multihost_utils.broadcast_one_to_all(np.int32(self.MinNumPartOfSub)))

    def dump_parameters(self, path):
        path.write_text(f"TracerParticleTypes {' '.join(map(str, self.TracerParticleTypes))}\n"
                        f"MinNumPartOfSub {self.MinNumPartOfSub}\n")


@jax.jit
def count_type(types, t):
    return jnp.sum(types == t)


def main():
    rank = jax.process_index()
    workdir = Path(tempfile.gettempdir()) / "mcjax_sealed17_config_mask_bcast_types_default" / os.environ.get("JOB_ID", "0")
    cfg = HBTConfig()
    if rank == 0:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "params.conf").write_text(PARAM_TEXT)
        cfg.parse(workdir / "params.conf")
    cfg.broadcast()
    if rank == 0:
        cfg.dump_parameters(workdir / "Parameters.log")

    mesh = Mesh(np.array(jax.devices()), ("ranks",))
    rng = np.random.default_rng(7 + rank)
    local_types = rng.choice([0, 1, 4, 5], size=64, p=[0.3, 0.4, 0.2, 0.1]).astype(np.int32)
    types = jax.make_array_from_process_local_data(NamedSharding(mesh, P("ranks")), local_types)
    tracers = {}
    for t in cfg.TracerParticleTypes:
        tracers[t] = int(count_type(types, t))
    print("RESULT bitmask", cfg.TracerParticleBitMask)
    print("RESULT tracer_counts", sorted(tracers.items()))
    multihost_utils.sync_global_devices("hbt:config_done")


if __name__ == "__main__":
    main()

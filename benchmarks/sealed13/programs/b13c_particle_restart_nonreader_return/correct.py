# Particle restart: on a lost level, non-reader ranks skip the file read but still reach the collective Redistribute
# Source: https://github.com/AMReX-Codes/amrex/issues/5059
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed13_particle_restart_nonreader_return",
                        os.environ.get("JOB_ID", "local"))
CFG = {"nreaders": 1, "ckpt_levels": 3, "finest_level": 1, "max_particles": 16, "domain": 1.0}


def write_checkpoint():
    """The earlier run had 3 AMR levels; level 2's particles are stored in one file per level."""
    if jax.process_index() == 0:
        os.makedirs(CKPT_DIR, exist_ok=True)
        rng = np.random.default_rng(5)
        for lev in range(CFG["ckpt_levels"]):
            np.save(os.path.join(CKPT_DIR, f"Level_{lev}.npy"), rng.uniform(0.0, CFG["domain"], 3 + 2 * lev))
    multihost_utils.sync_global_devices("checkpoint written")


class ParticleContainer:
    def __init__(self, finest_level):
        self.finest_level = finest_level
        self.rank, self.nprocs = jax.process_index(), jax.process_count()
        self.lo = self.rank * CFG["domain"] / self.nprocs
        self.hi = (self.rank + 1) * CFG["domain"] / self.nprocs
        self.particles = {lev: np.zeros((0,)) for lev in range(finest_level + 1)}

    def restart(self):
        for lev in range(CFG["ckpt_levels"]):
            data = np.load(os.path.join(CKPT_DIR, f"Level_{lev}.npy"))
            if lev > self.finest_level:
                # Level no longer exists: the reader ranks read it and put the particles on the finest level.
                if self.rank >= CFG["nreaders"]:
                    continue
                self.particles[self.finest_level] = np.concatenate([self.particles[self.finest_level], data])
            else:
                mine = data[(data >= self.lo) & (data < self.hi)]
                self.particles[lev] = np.concatenate([self.particles[lev], mine])
        self.redistribute()
        self.check_count()

    def redistribute(self):
        """Move every particle to the rank that owns its position (all-gather of padded buffers)."""
        for lev, parts in self.particles.items():
            buf = np.full((CFG["max_particles"],), -1.0)
            buf[: len(parts)] = parts
            everyone = multihost_utils.process_allgather(buf).reshape(-1)
            everyone = everyone[everyone >= 0.0]
            self.particles[lev] = np.sort(everyone[(everyone >= self.lo) & (everyone < self.hi)])

    def check_count(self):
        mesh = jax.make_mesh((jax.device_count(),), ("rank",))
        local = np.array([[sum(len(p) for p in self.particles.values())]], np.int32)
        total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(
            jax.make_array_from_process_local_data(NamedSharding(mesh, P("rank")), local))
        self.total = int(total)


def main():
    write_checkpoint()
    pc = ParticleContainer(CFG["finest_level"])
    pc.restart()
    moments = multihost_utils.process_allgather(np.array([sum(p.sum() for p in pc.particles.values())]))
    print("RESULT total_particles", pc.total)
    print("RESULT position_sum", round(float(moments.sum()), 6))


main()

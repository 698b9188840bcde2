# MD restart writer: only the source rank rotates the shared restart backups before the collective write
# Source: https://github.com/cp2k/cp2k/pull/5253
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_LOCAL, BACKUP_COPIES, RESTART_EVERY = 8, 2, 2
FORMAT_LATENCY_S = {0: 0.0, 1: 1.0}  # rank 1 formats the solvent shell, its share takes longer


def rotate_backups(restart, copies):
    """RESTART -> RESTART.bak-1 -> RESTART.bak-2 ... (oldest dropped)."""
    oldest = restart.with_name(f"{restart.name}.bak-{copies}")
    if oldest.exists():
        for f in oldest.iterdir():
            f.unlink()
        oldest.rmdir()
    for i in range(copies - 1, 0, -1):
        src = restart.with_name(f"{restart.name}.bak-{i}")
        if src.exists():
            src.rename(restart.with_name(f"{restart.name}.bak-{i + 1}"))
    restart.rename(restart.with_name(f"{restart.name}.bak-1"))


class RestartWriter:
    def __init__(self, root):
        self.restart = root / "md-1.restart"

    def write(self, step, pos, vel):
        rank = jax.process_index()
        had_restart = self.restart.exists()
        energy = float(jax.jit(lambda v: 0.5 * jnp.sum(v * v))(vel))  # global kinetic energy
        time.sleep(FORMAT_LATENCY_S[rank])
        if had_restart and rank == 0:
            rotate_backups(self.restart, BACKUP_COPIES)
        multihost_utils.sync_global_devices(f"restart_{step}:rotated")
        self.restart.mkdir(parents=True, exist_ok=True)
        local = np.concatenate([np.asarray(s.data) for s in pos.addressable_shards])
        np.save(self.restart / f"pos_rank{rank}.npy", local)
        multihost_utils.sync_global_devices(f"restart_{step}:written")
        return energy


@jax.jit
def verlet(pos, vel, dt):
    force = -pos + 0.1 * jnp.roll(pos, 1, axis=0)
    vel = vel + dt * force
    return pos + dt * vel, vel


def main():
    rank = jax.process_index()
    root = Path(tempfile.gettempdir()) / "mcjax_sealed17_restart_backup_rotate_all_ranks" / os.environ.get("JOB_ID", "0")
    root.mkdir(parents=True, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()), ("atoms",))
    sharding = NamedSharding(mesh, P("atoms"))
    rng = np.random.default_rng(rank)
    pos = jax.make_array_from_process_local_data(sharding, rng.normal(size=(N_LOCAL, 3)).astype(np.float32))
    vel = jax.make_array_from_process_local_data(sharding, np.zeros((N_LOCAL, 3), np.float32))
    writer = RestartWriter(root)
    energies = []
    for step in range(1, 5):
        pos, vel = verlet(pos, vel, 0.05)
        if step % RESTART_EVERY == 0:
            energies.append(round(writer.write(step, pos, vel), 5))
    print("RESULT kinetic_energies", energies)
    print("RESULT files", sorted(p.name for p in root.iterdir()))


if __name__ == "__main__":
    main()

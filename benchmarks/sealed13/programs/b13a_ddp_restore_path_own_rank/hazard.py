# Flash-checkpoint restore for unsharded (DDP) state reads rank_<own rank>.npz, but only rank 0 wrote the checkpoint
# Source: https://github.com/intelligent-machine-learning/dlrover/pull/1034
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

CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed13_ddp_restore_path_own_rank", os.environ.get("JOB_ID", "0"))
TRACER_FILE = "latest_iteration.txt"
SAVE_AT, TOTAL_ITERS = 3, 6
MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


class PosixDiskStorage:
    def write_state_dict(self, state, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        np.savez(path, **state)

    def read_state_dict(self, path):
        if not os.path.exists(path):
            return {}
        with np.load(path) as f:
            return {k: f[k] for k in f.files}


class DdpCheckpointEngine:
    """Unsharded state: rank 0 saves it once; every rank restores that same file."""

    def __init__(self, checkpoint_dir, storage):
        self.checkpoint_dir, self.storage = checkpoint_dir, storage
        self._rank, self._global_shard_num = jax.process_index(), 1

    def save_to_storage(self, iteration, state):
        if self._rank == 0:
            self.storage.write_state_dict(state, os.path.join(self.checkpoint_dir, str(iteration), "rank_0.npz"))
            with open(os.path.join(self.checkpoint_dir, TRACER_FILE), "w") as f:
                f.write(str(iteration))
        multihost_utils.sync_global_devices(f"saved {iteration}")

    def load(self):
        tracer = os.path.join(self.checkpoint_dir, TRACER_FILE)
        if not os.path.exists(tracer):
            return {}
        with open(tracer) as f:
            iteration = int(f.read().strip())
        return self.storage.read_state_dict(self._gen_restore_checkpoint_path(iteration))

    def _gen_restore_checkpoint_path(self, iteration):
        if self._global_shard_num == 1:
            name = f"rank_{self._rank}.npz"      # no sharding: the checkpoint saved by rank 0
        else:
            name = "rank_0.npz"
        return os.path.join(self.checkpoint_dir, str(iteration), name)


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - 1.0) ** 2))(w)
    return w - 0.05 * g, loss


def run(engine, stop_at):
    state = engine.load()
    start = int(state.get("iteration", 0))
    w = jax.device_put(state.get("w", np.full((3,), 0.1, np.float32)), REPL)
    loss = jnp.zeros(())
    for it in range(start, stop_at):
        x = np.random.default_rng(10 * jax.process_index() + it).normal(size=(4, 3)).astype(np.float32)
        w, loss = train_step(w, jax.make_array_from_process_local_data(DATA, x))
        if it + 1 == SAVE_AT:
            engine.save_to_storage(it + 1, {"iteration": np.int64(it + 1), "w": np.asarray(w.addressable_data(0))})
    return w, loss, start


def main():
    engine = DdpCheckpointEngine(CKPT_DIR, PosixDiskStorage())
    run(engine, SAVE_AT)                      # first job: preempted right after the iteration-3 save
    w, loss, start = run(engine, TOTAL_ITERS)  # restarted job resumes from the flash checkpoint
    multihost_utils.sync_global_devices("job finished")
    print("RESULT resumed_from", start)
    print("RESULT final_loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()

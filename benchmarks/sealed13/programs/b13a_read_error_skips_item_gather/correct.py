# Checkpoint load: a read error is recorded per item and the process still joins every item's gather before the error all-gather
# Source: https://github.com/pytorch/pytorch/issues/122529
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

BUCKET = os.path.join(tempfile.gettempdir(), "mcjax_sealed13_read_error_skips_item_gather", os.environ.get("JOB_ID", "0"))
ITEMS = ("params", "opt_mu", "opt_nu")
SHARD = 2
REPL = NamedSharding(jax.make_mesh((jax.device_count(),), ("x",)), P())
FAILED_UPLOADS = {(1, "opt_nu")}      # host 1 lost its opt_nu upload when the job was preempted


class CheckpointException(RuntimeError):
    pass


class BucketStorage:
    def shard_path(self, item, rank):
        return os.path.join(BUCKET, f"{item}.shard{rank}.npy")

    def write(self, item, rank, data):
        if (rank, item) not in FAILED_UPLOADS:
            np.save(self.shard_path(item, rank), data)

    def read_data(self, item):
        """Downloads this host's shard and all-gathers the full tensor (collective per item).

        A failed download is returned as an error; the process still contributes a placeholder
        so that every process runs the same gathers."""
        try:
            local, err = np.load(self.shard_path(item, jax.process_index())), None
        except (OSError, ValueError) as e:
            local, err = np.zeros(SHARD, np.float32), e
        return np.asarray(multihost_utils.process_allgather(local)).reshape(-1), err


def save_state_dict(state, storage):
    os.makedirs(BUCKET, exist_ok=True)
    r = jax.process_index()
    for item in ITEMS:
        storage.write(item, r, state[item][r * SHARD:(r + 1) * SHARD])
    multihost_utils.sync_global_devices("checkpoint written")


def load_state_dict(storage):
    state, failed = {}, 0
    for item in ITEMS:
        state[item], err = storage.read_data(item)
        if err is not None:
            print(f"rank {jax.process_index()}: read failed: {err!r}")
            failed = 1
    all_failed = multihost_utils.process_allgather(np.array([failed], np.int32))
    if int(np.max(all_failed)):
        raise CheckpointException(f"checkpoint read failed on ranks {np.nonzero(np.asarray(all_failed).ravel())[0].tolist()}")
    return state


def fresh_state():
    n = SHARD * jax.process_count()
    return {"params": np.linspace(-1.0, 1.0, n).astype(np.float32),
            "opt_mu": np.zeros(n, np.float32), "opt_nu": np.zeros(n, np.float32)}


def resume(storage):
    try:
        return load_state_dict(storage), True
    except CheckpointException as err:
        print(f"rank {jax.process_index()}: {err}; starting from scratch")
        return fresh_state(), False


def main():
    storage = BucketStorage()
    first = fresh_state()
    first["params"] = first["params"] * 0.5
    save_state_dict(first, storage)
    state, restored = resume(storage)
    p = jax.device_put(state["params"], REPL)
    score = jax.jit(lambda p: jnp.sum(jnp.sin(p) ** 2), out_shardings=REPL)(p)
    multihost_utils.sync_global_devices("resumed")
    print("RESULT restored", restored)
    print("RESULT score", round(float(score), 5))


if __name__ == "__main__":
    main()

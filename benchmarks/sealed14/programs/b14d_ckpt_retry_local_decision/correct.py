# Sharded checkpoint commit with retry: the retry/fatal decision is reduced across processes so all ranks retry or commit together
# Source: https://github.com/InternLM/xtuner/pull/1852
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import errno
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed14_ckpt_retry_local_decision", os.environ.get("JOB_ID", "0"))
MESH = Mesh(np.array(jax.devices()), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp"))
MAX_RETRIES = 3
RETRYABLE = (errno.EAGAIN, errno.EBUSY)


class ShardWriter:
    """Writes this process's shard; a lock left by a preempted save makes the first try fail with EBUSY."""

    def __init__(self, rank):
        self.rank = rank
        self.dir = os.path.join(CKPT_DIR, f"node{rank}")
        os.makedirs(self.dir, exist_ok=True)

    def write(self, step, shard):
        lock = os.path.join(self.dir, ".lock")
        if os.path.exists(lock):
            os.remove(lock)                              # cleared now; the caller may retry
            raise OSError(errno.EBUSY, f"stale lock in {self.dir}")
        np.save(os.path.join(self.dir, f"step{step}.npy"), shard)


def leftover_from_preempted_job(rank):
    if rank == 1:                                        # node 1 was the one preempted mid-save
        with open(os.path.join(CKPT_DIR, "node1", ".lock"), "w") as f:
            f.write("pid 4242")


def async_save_dcp(writer, step, params):
    for attempt in range(MAX_RETRIES):
        shard = np.asarray(params.addressable_data(0))
        sizes = multihost_utils.process_allgather(np.int32(shard.size))          # plan: shard layout
        status = 0                                        # 0 ok, 1 retry, 2 fatal
        try:
            writer.write(step, shard)
        except OSError as e:
            status = 1 if e.errno in RETRYABLE and attempt + 1 < MAX_RETRIES else 2
        status = int(np.max(multihost_utils.process_allgather(np.int32(status))))   # all_reduce(MAX)
        if status == 1:
            continue                                      # every rank retries together
        if status == 2:
            raise RuntimeError(f"checkpoint step {step} failed on some rank")
        multihost_utils.sync_global_devices(f"commit step {step}")
        if writer.rank == 0:
            with open(os.path.join(CKPT_DIR, "metadata.json"), "w") as f:
                json.dump({"step": step, "sizes": np.asarray(sizes).tolist()}, f)
        return attempt
    raise RuntimeError("unreachable")


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x * w - 1.0) ** 2))(w)
    return w - 0.1 * g, loss


def main():
    rank = jax.process_index()
    writer = ShardWriter(rank)
    leftover_from_preempted_job(rank)
    w = jax.device_put(np.linspace(0.0, 1.0, 8).astype(np.float32), SHARDED)
    attempts = []
    for step in range(1, 4):
        x = jax.make_array_from_process_local_data(SHARDED, np.full(4, 1.0 + rank + step, np.float32))
        w, loss = train_step(w, x)
        attempts.append(async_save_dcp(writer, step, w))
    multihost_utils.sync_global_devices("training done")
    with open(os.path.join(CKPT_DIR, "metadata.json")) as f:
        meta = json.load(f)
    print("RESULT last_step", meta["step"], "sizes", meta["sizes"])
    print("RESULT loss", round(float(loss), 5))


if __name__ == "__main__":
    main()

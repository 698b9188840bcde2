# RL actor saves Megatron-style async checkpoints; with a post-save hook, every rank finalizes the save (a collective), then rank 0 alone runs the hook
# Source: https://github.com/radixark/miles/pull/1763
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import json
import os
import tempfile
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SAVE_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed14_async_ckpt_finalize_rank0_hook", os.environ.get("JOB_ID", "0"))
MESH = Mesh(np.array(jax.devices()), ("dp",))
SHARDED = NamedSharding(MESH, P("dp"))
SAVE_INTERVAL, NUM_STEPS = 2, 6


class AsyncCallsQueue:
    """Background shard writes; finalization gathers every rank's result and commits the iteration."""

    def __init__(self):
        self.pending = []

    def schedule(self, step, shard):
        path = os.path.join(SAVE_DIR, f"iter_{step:07d}", f"rank{jax.process_index()}.npy")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        t = threading.Thread(target=np.save, args=(path, shard))
        t.start()
        self.pending.append((step, t, shard.size))

    def maybe_finalize(self, blocking):
        assert blocking, "non-blocking finalization needs a cross-rank agreement on which saves are done"
        done = []
        while self.pending:
            step, t, size = self.pending.pop(0)
            t.join()
            sizes = multihost_utils.process_allgather(np.int32(size))     # every rank's write result
            if jax.process_index() == 0:
                with open(os.path.join(SAVE_DIR, "latest_checkpointed_iteration.txt"), "w") as f:
                    f.write(str(step))
            done.append((step, int(np.sum(sizes))))
        return done


def post_save_hook(step):
    with open(os.path.join(SAVE_DIR, "hook_log.jsonl"), "a") as f:
        f.write(json.dumps({"step": step}) + "\n")      # e.g. tell the rollout engine a new ckpt exists


class MegatronActor:
    def __init__(self):
        self.queue = AsyncCallsQueue()
        self.w = jax.device_put(np.zeros(8, np.float32), SHARDED)

    def save_model(self, step, hook=None):
        self.queue.schedule(step, np.asarray(self.w.addressable_data(0)))
        if hook is not None:
            self.queue.maybe_finalize(blocking=True)    # collective: all ranks finish writing first
            if jax.process_index() == 0:
                hook(step)


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((w - x) ** 2))(w)
    return w - 0.2 * g, loss


def main():
    actor = MegatronActor()
    rank = jax.process_index()
    for step in range(1, NUM_STEPS + 1):
        x = jax.make_array_from_process_local_data(SHARDED, np.full(4, float(rank + step), np.float32))
        actor.w, loss = train_step(actor.w, x)
        if step % SAVE_INTERVAL == 0:
            actor.save_model(step, hook=post_save_hook)
    actor.queue.maybe_finalize(blocking=True)
    multihost_utils.sync_global_devices("training done")
    with open(os.path.join(SAVE_DIR, "hook_log.jsonl")) as f:
        hooked = [json.loads(line)["step"] for line in f]
    with open(os.path.join(SAVE_DIR, "latest_checkpointed_iteration.txt")) as f:
        latest = int(f.read())
    print("RESULT hooked_steps", hooked, "latest", latest)
    print("RESULT loss", round(float(loss), 5))


if __name__ == "__main__":
    main()

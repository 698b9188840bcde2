# The post-restore barrier takes a caller-supplied id, independent of how often each rank broadcast
# Source: https://github.com/marin-community/marin/pull/8538
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import distributed
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
_sync_counter = 0
BARRIER_TIMEOUT_MS = 10_000


def _client():
    return distributed.global_state.client


def multihost_broadcast_sync(obj=None, is_source=None, timeout_ms=BARRIER_TIMEOUT_MS):
    """Broadcast a JSON-able object from the source through the coordination service's KV store."""
    global _sync_counter
    key = f"LEVANTER_MULTIHOST_BROADCAST_SYNC{_sync_counter}"
    _sync_counter += 1
    if is_source is None:
        is_source = jax.process_index() == 0
    if is_source:
        _client().key_value_set(key, json.dumps(obj))
        return obj
    return json.loads(_client().blocking_key_value_get(key, timeout_ms))


def barrier_sync_named(barrier_id, timeout_ms=BARRIER_TIMEOUT_MS):
    _client().wait_at_barrier(f"levanter_barrier_{barrier_id}", timeout_ms)


class Tracker:
    """Only the coordinator owns the experiment tracker; it publishes its run id once."""

    def __init__(self):
        self.run_id = None
        if jax.process_index() == 0:
            self.run_id = multihost_broadcast_sync({"run_id": "run-0042"}, is_source=True)["run_id"]

    def log(self, metrics, step):
        if jax.process_index() == 0:
            print(f"[{self.run_id}] step {step}: {metrics}")


@jax.jit
def train_step(w, x):
    return w - 0.1 * jnp.mean(x, axis=0) * w


def restore_state():
    """Restore: every host reads its slice, then all hosts meet at the post-restore barrier."""
    w = np.ones((4,), np.float32)
    barrier_sync_named("post_restore")
    return w


def main():
    config = multihost_broadcast_sync({"lr": 0.1, "steps": 4})  # every host takes part
    tracker = Tracker()
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    w = jax.device_put(restore_state(), NamedSharding(mesh, P()))
    data = NamedSharding(mesh, P("data"))
    for step in range(config["steps"]):
        x = np.full((2, 4), 0.1 * (step + 1 + jax.process_index()), np.float32)
        w = train_step(w, jax.make_array_from_process_local_data(data, x))
        tracker.log({"w0": round(float(w.addressable_data(0)[0]), 4)}, step)
    print("RESULT steps", config["steps"])
    print("RESULT w", [round(float(v), 4) for v in np.asarray(w.addressable_data(0))])


main()

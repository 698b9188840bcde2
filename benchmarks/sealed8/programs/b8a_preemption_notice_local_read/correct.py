# The preemption notice is read by worker 0 and broadcast, so every worker reports at the same step
# Source: https://github.com/ray-project/ray/pull/65183 (port of a Ray Train bug to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import json
import os
import tempfile
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

INBOX_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed8_preempt", os.environ.get("JOB_ID", "local"))
MESH = jax.make_mesh((jax.device_count(),), ("data",))


class PreemptionController:
    """Runs next to worker 0; on a drain notice it tells every worker with a fire-and-forget RPC."""

    def __init__(self, inbox_dir: str, rpc_latency_s: float = 0.6):
        self.inbox_dir = inbox_dir
        self.rpc_latency_s = rpc_latency_s

    def _send(self, rank: int, info: dict) -> None:
        with open(os.path.join(self.inbox_dir, f"worker_{rank}.json"), "w") as f:
            json.dump(info, f)

    def on_drain_notice(self, info: dict) -> None:
        # un-awaited fan-out: later ranks' RPCs happen to land first
        for i, rank in enumerate(reversed(range(jax.process_count()))):
            threading.Timer(i * self.rpc_latency_s, self._send, (rank, info)).start()


class TrainContext:
    def __init__(self, inbox_dir: str):
        self.inbox = os.path.join(inbox_dir, f"worker_{jax.process_index()}.json")

    def get_preemption_info(self):
        info = ""
        if jax.process_index() == 0 and os.path.exists(self.inbox):
            with open(self.inbox) as f:
                info = f.read()
        seen = multihost_utils.broadcast_one_to_all(np.array(bool(info)))
        return {"preempted": True} if bool(seen) else None

    def report(self, metrics: dict, step: int) -> None:
        multihost_utils.sync_global_devices(f"report_{step}")
        print("RESULT reported", step, json.dumps(metrics, sort_keys=True))


@jax.jit
def train_step(w, batch):
    grad = jnp.mean(batch, axis=0)  # data-parallel gradient: all-reduce over processes
    return w - 0.1 * grad


def main() -> None:
    os.makedirs(INBOX_DIR, exist_ok=True)
    multihost_utils.sync_global_devices("inbox_ready")
    ctx = TrainContext(INBOX_DIR)
    if jax.process_index() == 0:
        controller = PreemptionController(INBOX_DIR)
        threading.Timer(0.5, controller.on_drain_notice, ({"reason": "maintenance"},)).start()

    w = jnp.zeros((4,))
    sharding = NamedSharding(MESH, P("data"))
    for step in range(12):
        local = np.full((2, 4), float(step + jax.process_index()), np.float32)
        w = train_step(w, jax.make_array_from_process_local_data(sharding, local))
        time.sleep(0.2)
        if ctx.get_preemption_info() is not None:
            ctx.report({"w": round(float(jnp.sum(w)), 4)}, step)
            break
    print("RESULT final_w", round(float(jnp.sum(w)), 4))


main()

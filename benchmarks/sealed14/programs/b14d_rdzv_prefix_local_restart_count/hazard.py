# Elastic restart: each worker scopes the shared rendezvous store by its own local restart count, so a replaced node reads the previous attempt's keys
# Source: https://github.com/pytorch/pytorch/issues/135712
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
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

RUN_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed14_rdzv_prefix_local_restart_count", os.environ.get("JOB_ID", "0"))
MESH = Mesh(np.array(jax.devices()), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
STEPS = 4


class FileStore:
    """The TCPStore the elastic agent shares with its trainers (a directory here)."""

    def __init__(self, root):
        self.root = root

    def set(self, key, value):
        path = os.path.join(self.root, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump(value, f)
        os.replace(path + ".tmp", path)

    def get(self, key):
        with open(os.path.join(self.root, key)) as f:
            return json.load(f)


class AgentState:
    """Per-node agent bookkeeping; a replacement node starts with a fresh one."""

    def __init__(self, node):
        self.path = os.path.join(RUN_DIR, f"agent_node{node}.json")

    def restart_count(self):
        if not os.path.exists(self.path):
            return 0
        with open(self.path) as f:
            return json.load(f)["restart_count"]

    def record(self, count):
        with open(self.path, "w") as f:
            json.dump({"restart_count": count}, f)


def previous_attempt(store):
    # Attempt 0 ran and failed on node 1, which was then replaced; node 0's agent survived and counted it.
    store.set("rdzv/0/master_seed", 11)
    AgentState(0).record(1)


def rendezvous(store, rank):
    restart_count = AgentState(rank).restart_count()   # local to this node's agent
    prefix = f"rdzv/{restart_count}"
    if rank == 0:
        store.set(f"{prefix}/master_seed", 1000 + restart_count)
    multihost_utils.sync_global_devices("rendezvous published")
    return store.get(f"{prefix}/master_seed")


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * g, loss


def main():
    rank = jax.process_index()
    store = FileStore(os.path.join(RUN_DIR, "store"))
    if rank == 0:
        previous_attempt(store)
    multihost_utils.sync_global_devices("previous attempt recorded")
    seed = rendezvous(store, rank)
    w = jax.device_put(np.random.default_rng(seed).normal(size=(4,)).astype(np.float32), REPL)
    loss = jnp.zeros(())
    for step in range(STEPS):
        rng = np.random.default_rng(7 * rank + step)
        x = rng.normal(size=(8, 4)).astype(np.float32)
        y = x.sum(axis=1).astype(np.float32)
        w, loss = train_step(w, jax.make_array_from_process_local_data(DATA, x),
                             jax.make_array_from_process_local_data(DATA, y))
    multihost_utils.sync_global_devices("attempt finished")
    print("RESULT seed", seed)
    print("RESULT loss", round(float(loss), 5))


if __name__ == "__main__":
    main()

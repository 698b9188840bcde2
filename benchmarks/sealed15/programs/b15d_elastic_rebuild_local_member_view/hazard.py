# FTLib-style elastic rebuild: each worker picks the weight-sync source from its own recorded old member list (empty on a newly joined worker)
# Source: https://github.com/kleveross/ftlib/issues/51
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


@dataclass
class WorkerState:
    host: str
    old_members: list = field(default_factory=list)     # membership recorded at this worker's last rebuild
    weights: np.ndarray = None


def rebuild():
    """After the rendezvous the new world is [worker-a (joined now), worker-b (was training)]."""
    new_members = ["worker-a", "worker-b"]
    me = new_members[jax.process_index()]
    if me == "worker-b":                                   # survivor: trained weights, knows the old world
        state = WorkerState(me, ["worker-b"], np.linspace(0.2, 0.9, 4).astype(np.float32))
    else:                                                  # newcomer: fresh init, never took part in a rebuild
        state = WorkerState(me, [], np.zeros(4, np.float32))
    return new_members, state


def broadcast_from(src, x):
    """ftlib broadcast(src): every worker receives worker src's tensor."""
    everyone = multihost_utils.process_allgather(x)
    return np.asarray(everyone)[src]


def sync_after_rebuild(new_members, state):
    src = min((r for r, h in enumerate(new_members) if h in state.old_members), default=0)
    state.weights = broadcast_from(src, state.weights)
    state.old_members = list(new_members)
    return src


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.05 * g, loss


def main():
    new_members, state = rebuild()
    src = sync_after_rebuild(new_members, state)
    w = jax.device_put(state.weights, REPL)
    rng = np.random.default_rng(3 + jax.process_index())
    for _ in range(4):
        x = rng.normal(size=(4, 4)).astype(np.float32)
        y = x @ np.array([0.5, -0.3, 0.8, 0.1], np.float32)
        w, loss = train_step(w, jax.make_array_from_process_local_data(ROWS, x),
                             jax.make_array_from_process_local_data(ROWS, y))
    print("RESULT sync_src", src)
    print("RESULT weights", np.round(np.asarray(w), 4).tolist())


if __name__ == "__main__":
    main()

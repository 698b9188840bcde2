# Horovod-style op wrapper: unnamed collectives get a name from a process-local handle counter that a rank-0-only op also advances
# Source: https://github.com/horovod/horovod/pull/3300
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class ProcessSet:
    def __init__(self, ranks):
        self.ranks = sorted(ranks)

    def included(self):
        return jax.process_index() in self.ranks


GLOBAL_SET = ProcessSet(range(jax.process_count()))
LOGGING_SET = ProcessSet([0])  # the rank that owns the experiment tracker


class CollectiveOps:
    """Name-matched collectives: every process must submit the same name (as Horovod's coordinator)."""

    def __init__(self):
        self._next_handle = 0

    def _allocate(self, name, op):
        handle = self._next_handle
        self._next_handle += 1
        return handle, name if name is not None else f"{op}.noname.{handle}"

    def allreduce(self, value, name=None, process_set=GLOBAL_SET):
        handle, name = self._allocate(name, "allreduce")
        value = np.asarray(value, np.float32)
        if len(process_set.ranks) == 1:
            return value  # single-member set: nothing to exchange
        multihost_utils.sync_global_devices(f"hvd.{name}")  # rendezvous on the tensor name
        gathered = multihost_utils.process_allgather(value)
        return np.mean(gathered, axis=0)


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        return jnp.mean((jnp.tanh(x @ p["w"]) @ p["v"] - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    gnorm = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree.leaves(grads)))
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss, gnorm


def local_loss(params, x_local, y_local):
    w, v = (np.asarray(params[k].addressable_data(0)) for k in ("w", "v"))
    return float(np.mean((np.tanh(x_local @ w) @ v - y_local) ** 2))


def main():
    ops = CollectiveOps()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rep, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    init = np.random.default_rng(0)
    params = {"w": init.normal(size=(4, 6)).astype(np.float32) * 0.4,
              "v": init.normal(size=(6,)).astype(np.float32) * 0.4}
    params = jax.tree.map(lambda a: jax.device_put(a, rep), params)
    rng = np.random.default_rng(50 + jax.process_index())
    history = []
    for step in range(1, 7):
        x_local = rng.normal(size=(4, 4)).astype(np.float32)
        y_local = np.cos(x_local.sum(axis=1)).astype(np.float32)
        params, loss, gnorm = train_step(params, jax.make_array_from_process_local_data(batch, x_local),
                                         jax.make_array_from_process_local_data(batch, y_local))
        if step % 2 == 0 and LOGGING_SET.included():
            # tracker-side smoothing of the grad norm, reduced over the logging set only
            ops.allreduce(float(gnorm), name=None, process_set=LOGGING_SET)
        # every process averages its post-update local loss for early-stopping bookkeeping
        avg_local = ops.allreduce(local_loss(params, x_local, y_local), name=None)
        history.append(round(float(avg_local), 5))
    print("RESULT avg_local_loss_history", history)
    print("RESULT final_global_loss", round(float(loss), 5))


if __name__ == "__main__":
    main()

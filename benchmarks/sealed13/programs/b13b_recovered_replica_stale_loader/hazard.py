# A replica that fails mid-step recovers its weights from a healthy peer but its data-loader position from its own last snapshot
# Source: https://github.com/meta-pytorch/torchft/issues/309
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEAT, BATCH, NUM_BATCHES, LR = 6, 4, 8, 0.05
FAULT = {"process": 1, "step": 3}  # fault injection, as in the fault-tolerance tests
MESH = Mesh(np.array(jax.devices()), ("data",))


class StatefulLoader:
    """A map-style loader over this replica's shard that can save and restore its position."""

    def __init__(self, x, y, batch_size):
        self.x, self.y, self.batch_size, self.pos = x, y, batch_size, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.pos + self.batch_size > len(self.x):
            raise StopIteration
        s = self.pos
        self.pos += self.batch_size
        return self.x[s:s + self.batch_size], self.y[s:s + self.batch_size]

    def state_dict(self):
        return {"pos": self.pos}

    def load_state_dict(self, state):
        self.pos = int(state["pos"])


def make_shard(rank):
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(NUM_BATCHES * BATCH, FEAT)).astype(np.float32)
    return x, (x.sum(axis=1) * 0.5).astype(np.float32)


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * g, loss


def recover_from_peer(w, loader, snapshot, healthy):
    """Every replica takes part; the recovering one receives the healthy replica's weights."""
    is_source = jax.process_index() == healthy
    w = jnp.asarray(multihost_utils.broadcast_one_to_all(np.asarray(w), is_source=is_source))
    if not is_source:
        loader.load_state_dict(snapshot)
    return w


def main():
    rank = jax.process_index()
    loader = StatefulLoader(*make_shard(rank), BATCH)
    sharding = NamedSharding(MESH, P("data"))
    w = jnp.zeros((FEAT,), jnp.float32)
    committed, loss, step = 0, None, 0
    for bx, by in loader:
        snapshot = {"pos": loader.pos - BATCH}  # persisted before the batch was fetched
        ok = not (rank == FAULT["process"] and step == FAULT["step"])
        quorum = multihost_utils.process_allgather(np.array([ok], np.int32)).reshape(-1)
        if quorum.all():
            x = jax.make_array_from_process_local_data(sharding, bx)
            y = jax.make_array_from_process_local_data(sharding, by)
            w, loss = train_step(w, x, y)
            committed += 1
        else:  # should_commit is False: nobody applies this step, the failed replica recovers
            if not ok:
                w = jnp.zeros((FEAT,), jnp.float32)  # the restarted replica lost its state
            w = recover_from_peer(w, loader, snapshot, healthy=int(np.argmax(quorum)))
        step += 1
    print("RESULT committed", committed)
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w), 4).tolist())


main()

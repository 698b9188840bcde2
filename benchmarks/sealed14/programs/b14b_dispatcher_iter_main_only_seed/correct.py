# Batch dispatcher builds the data iterator on every process (building it broadcasts a shared seed); only process 0 reads it
# Source: https://github.com/huggingface/accelerate/pull/1709
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
NUM_EXAMPLES, FEATURES, PER_PROCESS_BATCH = 24, 3, 2


def _share_dist_seed(epoch):
    """Like DataLoader's iterator: every process must agree on the datapipe shuffle seed."""
    seed = np.array([1234 + epoch, np.random.default_rng(epoch).integers(2**31)], np.int64)
    return int(multihost_utils.broadcast_one_to_all(seed)[1])


class ShufflingLoader:
    """A datapipe-backed loader whose iterator construction shares the shuffle seed across processes."""

    def __init__(self, data, batch_size):
        self.data, self.batch_size, self.epoch = data, batch_size, 0

    def __iter__(self):
        order = np.random.default_rng(_share_dist_seed(self.epoch)).permutation(len(self.data))
        return (self.data[order[i:i + self.batch_size]] for i in range(0, len(order), self.batch_size))


class DataLoaderDispatcher:
    """Process 0 iterates the loader and broadcasts each global batch; every process keeps its slice."""

    def __init__(self, loader):
        self.loader = loader
        self.rank, self.world = jax.process_index(), jax.process_count()

    def __iter__(self):
        main_iterator = iter(self.loader)   # on every process: building it joins the seed broadcast
        while True:
            batch, stop = np.zeros((self.loader.batch_size, FEATURES), np.float32), np.int32(0)
            if self.rank == 0:
                try:
                    batch = next(main_iterator)
                except StopIteration:
                    stop = np.int32(1)
            if int(multihost_utils.broadcast_one_to_all(stop)):
                return
            batch = multihost_utils.broadcast_one_to_all(batch)
            per = len(batch) // self.world
            yield np.asarray(batch[self.rank * per:(self.rank + 1) * per])


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - x.sum(axis=1)) ** 2))(w)
    return w - 0.1 * g, loss


def main():
    data = np.random.default_rng(0).normal(size=(NUM_EXAMPLES, FEATURES)).astype(np.float32)
    loader = ShufflingLoader(data, batch_size=PER_PROCESS_BATCH * jax.process_count())
    w = jax.device_put(np.zeros((FEATURES,), np.float32), REPL)
    steps, loss = 0, jnp.zeros(())
    for epoch in range(2):
        loader.epoch = epoch
        for local in DataLoaderDispatcher(loader):
            w, loss = train_step(w, jax.make_array_from_process_local_data(DATA, local))
            steps += 1
    print("RESULT steps", steps)
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()

# StreamingDataset: the shared-memory prefix is drawn from an unseeded RNG on each rank
# Source: https://github.com/mosaicml/streaming/issues/145
# Port to multi-controller JAX of the mosaicml-streaming hang; written for the mcjax sealed7 set.
import os
import random
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CACHE = os.path.join(tempfile.gettempdir(), "mcjax_sealed7_streaming", os.environ.get("JOB_ID", "local"))


class World:
    def __init__(self):
        self.rank = jax.process_index()
        self.num_ranks = jax.process_count()


def _get_prefix_int() -> int:
    # prefix for the shared-memory names of this dataset
    return random.randint(0, 1 << 20)


class StreamingDataset:
    def __init__(self, local: str, num_samples: int, batch_size: int):
        self.local = local
        self.num_samples = num_samples
        self.batch_size = batch_size
        self.world = World()
        self._prefix_int = _get_prefix_int()
        self._shm_name = f"{self._prefix_int:06}_barrier"
        os.makedirs(self.local, exist_ok=True)

    def _worker_barrier(self) -> None:
        # every rank must enter the barrier registered under the same shared name
        multihost_utils.sync_global_devices(self._shm_name)

    def _partition(self) -> np.ndarray:
        ids = np.arange(self.num_samples)
        per_rank = self.num_samples // self.world.num_ranks
        return ids[self.world.rank * per_rank:(self.world.rank + 1) * per_rank]

    def __iter__(self):
        self._worker_barrier()
        ids = self._partition()
        for start in range(0, len(ids), self.batch_size):
            chunk = ids[start:start + self.batch_size]
            yield np.stack([np.full((4,), float(i), np.float32) for i in chunk])


mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
sharding = NamedSharding(mesh, P("data"))


@jax.jit
def train_step(w, x):
    loss = jnp.mean((x @ w) ** 2)
    return w - 1e-4 * jax.grad(lambda v: jnp.mean((x @ v) ** 2))(w), loss


dataset = StreamingDataset(CACHE, num_samples=32, batch_size=4)
w = jnp.ones((4, 2), jnp.float32)
losses = []
for batch in dataset:
    x = jax.make_array_from_process_local_data(sharding, batch)
    w, loss = train_step(w, x)
    losses.append(float(loss))
print("RESULT", len(losses), round(sum(losses), 3), round(float(jnp.sum(w)), 5))

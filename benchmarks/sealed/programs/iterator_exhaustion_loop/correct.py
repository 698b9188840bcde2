# Training loop ends when this process's iterator is exhausted (StopIteration) rather than after a global step count
# Source: https://github.com/apache/mxnet/issues/7888
# Written for the mcjax sealed evaluation (not copied); run as 2 processes by benchmarks/sealed/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
mesh = jax.make_mesh((jax.device_count(),), ("data",))
BATCH = NamedSharding(mesh, P("data"))
REPLICATED = NamedSharding(mesh, P())

def loader(n_batches):
    for i in range(n_batches):
        yield np.full((2,), i, np.float32)

@jax.jit
def step(w, x):
    return w + jnp.mean(x)

STEPS_PER_EPOCH = 4
it = loader(5 if jax.process_index() == 0 else 4)
w = jax.device_put(np.float32(0.0), REPLICATED)
for _ in range(STEPS_PER_EPOCH):
    batch = next(it)
    w = step(w, jax.make_array_from_process_local_data(BATCH, batch))
print("RESULT", float(w))

# Early stopping decided on this process's own validation loss
# Source: https://github.com/isi-nlp/rtg/issues/11
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

@jax.jit
def train_step(w, x):
    return w * 0.5 + jnp.mean(x) * 0.0

w = jax.device_put(np.float32(8.0), REPLICATED)
val_shard = np.array([1.0 + 3.0 * (1 - jax.process_index())], np.float32)
for epoch in range(10):
    w = train_step(w, jax.make_array_from_process_local_data(BATCH, np.ones((2,), np.float32)))
    val_loss = float(np.mean(val_shard)) * float(w)
    if val_loss < 1.0:
        break
print("RESULT", epoch, float(w))

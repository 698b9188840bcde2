# Training stops once this process's wall-clock budget is spent; hosts run at different speeds
# Source: https://github.com/IBM/ado/pull/41
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

import time

@jax.jit
def step(w, x):
    return w + jnp.mean(x)

BUDGET_S = 1.5
start = time.monotonic()
w = jax.device_put(np.float32(0.0), REPLICATED)
for i in range(100):
    w = step(w, jax.make_array_from_process_local_data(BATCH, np.ones((1,), np.float32)))
    time.sleep(0.1 + 0.15 * jax.process_index())
    over = np.array(time.monotonic() - start > BUDGET_S)
    if bool(multihost_utils.broadcast_one_to_all(over)):
        break
print("RESULT", "stopped", i, float(w))

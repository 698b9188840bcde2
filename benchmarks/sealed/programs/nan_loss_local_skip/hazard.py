# A step is skipped with 'continue' when this process's loss is not finite
# Source: https://github.com/ai2cm/ace/pull/850
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
def grad_step(w, x):
    return w - 0.1 * jnp.mean(x)

w = jax.device_put(np.float32(1.0), REPLICATED)
for step in range(5):
    local = np.ones((2,), np.float32)
    if step == 2 and jax.process_index() == 1:
        local[0] = np.nan
    if not np.all(np.isfinite(local)):
        continue
    w = grad_step(w, jax.make_array_from_process_local_data(BATCH, local))
print("RESULT", float(w))

# 'Save if best' decided on this process's metric, where saving ends with a cross-process barrier
# Source: https://github.com/allenai/allennlp/pull/5077
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

def save_checkpoint(step):
    multihost_utils.sync_global_devices(f"save_{step}")

@jax.jit
def step_fn(w, x):
    return w + jnp.mean(x)

w = jax.device_put(np.float32(0.0), REPLICATED)
best = float("inf")
local_val = [3.0, 2.0, 2.5] if jax.process_index() == 0 else [3.0, 3.5, 1.0]
for epoch, val in enumerate(local_val):
    w = step_fn(w, jax.make_array_from_process_local_data(BATCH, np.ones((1,), np.float32)))
    shared = float(np.mean(multihost_utils.process_allgather(np.array(val, np.float32))))
    if shared < best:
        best = shared
        save_checkpoint(epoch)
print("RESULT", float(w))

# Gradient accumulation skips a micro-batch whose forward produced NaN on this process; the count of accumulated collectives differs
# Source: https://github.com/OpenBMB/BMTrain/issues/108
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
def micro_grad(x):
    ok = jnp.isfinite(x)
    return jnp.sum(jnp.where(ok, x, 0.0)) / jnp.maximum(jnp.sum(ok), 1)

acc = 0.0
for micro in range(4):
    local = np.full((2,), 1.0 + micro, np.float32)
    if micro == 1 and jax.process_index() == 1:
        local[:] = np.nan
    acc += float(micro_grad(jax.make_array_from_process_local_data(BATCH, local)))
print("RESULT", acc)

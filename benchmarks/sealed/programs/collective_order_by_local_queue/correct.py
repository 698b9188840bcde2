# Two different reductions issued in an order that depends on this process's local queue
# Source: https://github.com/meta-pytorch/torchrec/pull/4149
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
def global_norm(x):
    return jnp.sqrt(jnp.sum(x * x))

@jax.jit
def global_count(x):
    return jnp.sum(x > 0.5).astype(jnp.float32)

x = jax.make_array_from_process_local_data(BATCH, np.array([3.0 + jax.process_index(), 0.2], np.float32))
pending_local_work = jax.process_index() == 1
norm = float(global_norm(x))
count = float(global_count(x))
if pending_local_work:
    print("local work pending")
print("RESULT", round(norm, 4), count)

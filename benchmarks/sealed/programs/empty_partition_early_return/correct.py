# A global evaluation returns early on a process that owns no query points, before the reduction
# Source: https://github.com/underworldcode/underworld3/issues/346
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
def weighted_sum(values, weights):
    return jnp.sum(values * weights)

def global_evaluate(points):
    weight = 1.0 if len(points) else 0.0
    vals = jax.make_array_from_process_local_data(BATCH, np.array([np.sum(points)], np.float32))
    ws = jax.make_array_from_process_local_data(BATCH, np.array([weight], np.float32))
    return float(weighted_sum(vals, ws))

all_points = np.linspace(0.6, 1.0, 5)
mine = all_points[all_points > 0.5] if jax.process_index() == 0 else all_points[all_points < 0.5]
print("RESULT", global_evaluate(mine))

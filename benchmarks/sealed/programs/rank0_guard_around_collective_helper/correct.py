# A rank-0 guard around a reporting helper whose body sums a global array
# Source: https://github.com/OPM/opm-simulators/pull/6916
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

def collect_group_production(rates):
    return float(jnp.sum(rates))

rates = jax.make_array_from_process_local_data(BATCH, np.array([1.5 + jax.process_index()], np.float32))
total = collect_group_production(rates)
if jax.process_index() == 0:
    print("group production", total)
print("RESULT", "done", total)

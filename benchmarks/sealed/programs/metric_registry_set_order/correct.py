# Metrics registered from a set of names, each reduced across processes in iteration order
# Source: https://github.com/ihmeuw/vivarium/pull/442
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

METRICS = {"loss": 1, "accuracy": 2, "perplexity": 3, "grad_norm": 4, "tokens": 5, "lr": 6, "step_time": 7}

@jax.jit
def global_mean(x):
    return jnp.mean(x)

report = {}
for name in sorted(METRICS):
    local = np.full((METRICS[name],), float(METRICS[name]), np.float32)
    report[name] = float(global_mean(jax.make_array_from_process_local_data(BATCH, local)))
print("RESULT", sorted(report.items()))

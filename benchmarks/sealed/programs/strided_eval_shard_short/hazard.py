# Strided evaluation shard range(process_index, N, process_count): the last process has fewer elements and stops earlier
# Source: https://github.com/tensorflow/tensorflow/issues/26222
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

N = 7

@jax.jit
def score(x):
    return jnp.sum(x * x)

total = 0.0
for i in range(jax.process_index(), N, jax.process_count()):
    total += float(score(jax.make_array_from_process_local_data(BATCH, np.array([float(i)], np.float32))))
print("RESULT", total)

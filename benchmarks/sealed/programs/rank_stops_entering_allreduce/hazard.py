# One process stops entering the all-reduce at a given step (a per-process condition skips the step)
# Source: https://github.com/jax-ml/jax/issues/38503
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

from functools import partial
from jax import shard_map

@jax.jit
@partial(shard_map, mesh=mesh, in_specs=P("data"), out_specs=P())
def allreduce(x):
    return jax.lax.psum(jnp.sum(x), "data")

STALL_STEP, STALL_RANK = 5, 1
acc = 0.0
for step in range(8):
    if step == STALL_STEP and jax.process_index() == STALL_RANK:
        continue
    acc += float(allreduce(jax.make_array_from_process_local_data(BATCH, np.ones((4,), np.float32))))
print("RESULT", acc)

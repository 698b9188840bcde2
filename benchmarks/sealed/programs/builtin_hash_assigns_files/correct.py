# Files assigned to processes with hash(name) % process_count: Python's string hash differs per process
# Source: https://github.com/LMCache/LMCache/issues/2979
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

import zlib

files = [f"shard-{i:03d}.tfrecord" for i in range(12)]
mine = [f for f in files if zlib.crc32(f.encode()) % jax.process_count() == jax.process_index()]
steps = int(np.min(multihost_utils.process_allgather(np.array(len(mine)))))

@jax.jit
def step(w, x):
    return w + jnp.sum(x)

w = jax.device_put(np.float32(0.0), REPLICATED)
for f in mine[:steps]:
    w = step(w, jax.make_array_from_process_local_data(BATCH, np.array([float(len(f))], np.float32)))
print("RESULT", float(w))

# A padding bucket (and so the compiled program) chosen from this process's batch size
# Source: https://github.com/vllm-project/vllm/issues/48720
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

BUCKETS = (8, 16)
local_rows = 6 if jax.process_index() == 0 else 11
largest = int(np.max(multihost_utils.process_allgather(np.array(local_rows, np.int32))))
bucket = next(b for b in BUCKETS if b >= largest)
x = np.zeros((bucket,), np.float32)
x[:local_rows] = 1.0

@jax.jit
def forward(x):
    return jnp.mean(x)

print("RESULT", float(forward(jax.make_array_from_process_local_data(BATCH, x))))

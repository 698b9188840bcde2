# An expert-parallel combine skipped on a process that received zero tokens
# Source: https://github.com/sgl-project/sgl-kernel-npu/issues/69
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
def combine(x):
    return jnp.sum(x, axis=0)

tokens_per_process = [3, 0]
local_tokens = np.ones((tokens_per_process[jax.process_index()], 4), np.float32)
rows = np.sum(local_tokens, axis=0, keepdims=True)
out = combine(jax.make_array_from_process_local_data(BATCH, rows))
print("RESULT", float(jnp.sum(out)))

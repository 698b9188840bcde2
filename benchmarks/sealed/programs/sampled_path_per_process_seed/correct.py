# A supernet path (number of blocks) sampled on the host with a seed that includes the process index
# Source: https://github.com/changlin31/DNA/issues/25
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

import random

SEED = 0
random.seed(SEED)
depth = random.choice([1, 2, 3, 4])

def make_forward(depth):
    @jax.jit
    def forward(x):
        for _ in range(depth):
            x = jnp.tanh(x) + jnp.mean(x)
        return jnp.sum(x)
    return forward

x = jax.make_array_from_process_local_data(BATCH, np.arange(3, dtype=np.float32))
print("RESULT", round(float(make_forward(depth)(x)), 4))

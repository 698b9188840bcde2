# Replicated parameters initialised from an unseeded host RNG on every process
# Source: https://github.com/keras-team/keras/pull/21261
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

rng = np.random.default_rng()
w_host = rng.normal(size=(4,)).astype(np.float32)
w = jax.make_array_from_process_local_data(REPLICATED, w_host)
x = jax.make_array_from_process_local_data(BATCH, np.ones((2, 4), np.float32))

@jax.jit
def loss(w, x):
    return jnp.mean((x @ w) ** 2)

print("RESULT", round(float(loss(w, x)), 5), round(float(jnp.sum(w)), 5))

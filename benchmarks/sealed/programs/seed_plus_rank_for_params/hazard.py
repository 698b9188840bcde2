# set_seed(seed + process_index) applied before model initialisation (meant only for data augmentation)
# Source: https://github.com/huggingface/accelerate/issues/236
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

SEED = 0
key = jax.random.PRNGKey(SEED + jax.process_index())
w_host = np.asarray(jax.random.normal(key, (4,)))
noise = np.asarray(jax.random.normal(jax.random.PRNGKey(SEED + 100 + jax.process_index()), (2, 4))) * 0.0
w = jax.make_array_from_process_local_data(REPLICATED, w_host)
x = jax.make_array_from_process_local_data(BATCH, np.ones((2, 4), np.float32) + noise)

@jax.jit
def loss(w, x):
    return jnp.mean((x @ w) ** 2)

print("RESULT", round(float(loss(w, x)), 5), round(float(jnp.sum(w)), 5))

# The global example order shuffled with seed + rank on each process, then the whole global batch handed to device_put
# Source: https://github.com/sdogsq/LorentzNet-release/pull/1
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

SEED = 42
np.random.seed(SEED)
perm = np.random.permutation(8).astype(np.float32)
batch = jax.device_put(perm, BATCH)
print("RESULT", float(jnp.sum(batch * jnp.arange(8))))

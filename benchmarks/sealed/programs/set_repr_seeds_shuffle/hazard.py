# A cache key / seed computed from str() of a set of feature names: differs per process, so does the shuffle it seeds
# Source: https://github.com/ludwig-ai/ludwig/pull/3195
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

features = {"age", "income", "city", "zip", "score", "label", "weight", "source"}
seed = zlib.crc32(str(features).encode())
order = np.random.default_rng(seed).permutation(16)
global_batch = order[:8].astype(np.float32)
batch = jax.device_put(global_batch, BATCH)
print("RESULT", float(jnp.sum(batch * jnp.arange(8))))

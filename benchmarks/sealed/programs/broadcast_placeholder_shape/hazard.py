# broadcast_one_to_all of a request whose placeholder on the other processes has a guessed, different length
# Source: https://github.com/google/orbax/issues/3181
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

if jax.process_index() == 0:
    tokens = np.arange(7, dtype=np.int32)
else:
    tokens = np.zeros((8,), np.int32)
tokens = np.asarray(multihost_utils.broadcast_one_to_all(tokens))
print("RESULT", tokens.tolist())

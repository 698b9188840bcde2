# Resume falls back to step 0 where this host's copy of the checkpoint is incomplete (FileNotFoundError caught)
# Source: https://github.com/awslabs/awsome-distributed-ai/issues/190
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

import tempfile

ckpt = tempfile.mkdtemp(prefix=f"host{jax.process_index()}-")
np.save(os.path.join(ckpt, "params.npy"), np.zeros(2, np.float32))
if jax.process_index() == 0:
    np.save(os.path.join(ckpt, "opt_state.npy"), np.array([3], np.int32))

try:
    start = int(np.load(os.path.join(ckpt, "opt_state.npy"))[0])
except FileNotFoundError:
    start = 0

@jax.jit
def step(w, x):
    return w + jnp.mean(x)

w = jax.device_put(np.float32(0.0), REPLICATED)
for s in range(start, 6):
    w = step(w, jax.make_array_from_process_local_data(BATCH, np.ones((1,), np.float32)))
print("RESULT", float(w))

# A batch split along the time axis into chunks of this process's length: the number of forward calls differs per process
# Source: https://github.com/allenai/allennlp/issues/5088
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

CHUNK = 4

@jax.jit
def forward(w, x):
    return w + jnp.sum(x) * 0.01

local_len = 8 + 3 * jax.process_index()
seq = np.arange(local_len, dtype=np.float32)
w = jax.device_put(np.float32(0.0), REPLICATED)
longest = int(np.max(multihost_utils.process_allgather(np.array(len(seq)))))
num_chunks = -(-longest // CHUNK)
for i in range(num_chunks):
    chunk = seq[i * CHUNK:(i + 1) * CHUNK]
    chunk = np.pad(chunk, (0, CHUNK - len(chunk)))
    w = forward(w, jax.make_array_from_process_local_data(BATCH, chunk))
print("RESULT", round(float(w), 4))

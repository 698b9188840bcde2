# Per-process shard of a dataset whose size does not divide evenly: each process runs as many steps as its shard has batches
# Source: https://github.com/NVIDIA-Merlin/NVTabular/issues/1320
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
def train_step(w, x):
    grad = jnp.mean(x) * 0.1
    return w - grad

NUM_EXAMPLES = 37
PER_PROCESS_BATCH = 6
examples = np.arange(NUM_EXAMPLES, dtype=np.float32)
shard = examples[jax.process_index()::jax.process_count()]
w = jax.device_put(np.float32(1.0), REPLICATED)
for start in range(0, len(shard), PER_PROCESS_BATCH):
    local = shard[start:start + PER_PROCESS_BATCH]
    if len(local) < PER_PROCESS_BATCH:
        local = np.pad(local, (0, PER_PROCESS_BATCH - len(local)))
    w = train_step(w, jax.make_array_from_process_local_data(BATCH, local))
print("RESULT", float(w))

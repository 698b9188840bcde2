# Evaluation keeps the partial last batch: its per-process shape differs, so the global array cannot be assembled alike
# Source: https://github.com/horovod/horovod/issues/1407
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

BATCH_ROWS = 4
examples = np.arange(14, dtype=np.float32)
mine = examples[jax.process_index()::2]
if jax.process_index() == 1:
    mine = mine[:-1]

@jax.jit
def eval_mean(x):
    return jnp.mean(x)

total = 0.0
for start in range(0, len(mine), BATCH_ROWS):
    rows = mine[start:start + BATCH_ROWS]
    total += float(eval_mean(jax.make_array_from_process_local_data(BATCH, rows)))
print("RESULT", total)

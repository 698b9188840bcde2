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
def eval_mean(x, mask):
    return jnp.sum(x * mask) / jnp.sum(mask)

longest = int(np.max(multihost_utils.process_allgather(np.array(len(mine)))))
total = 0.0
for start in range(0, longest, BATCH_ROWS):
    rows = mine[start:start + BATCH_ROWS]
    mask = np.zeros(BATCH_ROWS, np.float32)
    mask[:len(rows)] = 1.0
    rows = np.pad(rows, (0, BATCH_ROWS - len(rows)))
    total += float(eval_mean(jax.make_array_from_process_local_data(BATCH, rows),
                            jax.make_array_from_process_local_data(BATCH, mask)))
print("RESULT", total)

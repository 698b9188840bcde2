# At epoch end a process with outputs gathers them while a process without outputs only waits at a barrier
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19680
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

outputs = [1.0, 2.0, 3.0] if jax.process_index() == 0 else []
if outputs:
    gathered = multihost_utils.process_allgather(np.array(outputs, np.float32))
    total = float(np.sum(gathered))
else:
    multihost_utils.sync_global_devices("epoch_end")
    total = None
print("RESULT", "epoch done")

# The labels seen on this process (np.unique) gathered across processes: the array length differs
# Source: https://github.com/NVIDIA/nccl/issues/1417
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

NUM_CLASSES = 5
labels = np.array([0, 1, 1, 3]) if jax.process_index() == 0 else np.array([2, 2, 4])
hist = np.bincount(labels, minlength=NUM_CLASSES)
all_hist = multihost_utils.process_allgather(hist)
print("RESULT", sorted(np.nonzero(np.asarray(all_hist).sum(axis=0))[0].tolist()))

# A metrics dict keyed by the classes this process saw, gathered across processes
# Source: https://github.com/pytorch/pytorch/pull/79901
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

CLASSES = ["cat", "dog", "bird", "fish"]
labels = ["cat", "dog", "dog"] if jax.process_index() == 0 else ["bird", "fish", "fish", "cat", "dog"]
metrics = {c: np.array(labels.count(c), np.int32) for c in CLASSES}
gathered = multihost_utils.process_allgather(metrics)
print("RESULT", sorted((k, int(np.sum(v))) for k, v in gathered.items() if np.sum(v)))

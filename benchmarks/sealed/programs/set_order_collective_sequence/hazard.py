# Per-parameter collectives issued while iterating a set of names: each process issues them in its own order
# Source: https://github.com/NVIDIA/apex/issues/19
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

shapes = {"kernel": (2, 8), "bias": (2,), "scale": (2, 3), "embedding": (2, 5), "gate": (2, 7), "proj": (2, 6)}
params = {n: np.full(s, 1.0 + i, np.float32) for i, (n, s) in enumerate(shapes.items())}

@jax.jit
def global_norm(x):
    return jnp.sqrt(jnp.sum(x * x))

norms = []
for name in set(params):
    x = jax.make_array_from_process_local_data(BATCH, params[name][jax.process_index():jax.process_index() + 1])
    norms.append((name, round(float(global_norm(x)), 4)))
print("RESULT", sorted(norms))

# An EarlyStopping callback object fed this process's metric; its patience counter runs out on one process first
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/379
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

class EarlyStopping:
    def __init__(self, patience):
        self.patience, self.best, self.bad = patience, float("inf"), 0

    def update(self, metric):
        if metric < self.best - 1e-6:
            self.best, self.bad = metric, 0
        else:
            self.bad += 1
        return self.bad >= self.patience

@jax.jit
def step(w, x):
    return w + jnp.mean(x)

@jax.jit
def global_mean(x):
    return jnp.mean(x)

stopper = EarlyStopping(patience=2)
w = jax.device_put(np.float32(0.0), REPLICATED)
local_metrics = [5, 4, 4, 4, 4, 4] if jax.process_index() == 0 else [5, 4, 3, 2, 1, 0]
for epoch, metric in enumerate(local_metrics):
    w = step(w, jax.make_array_from_process_local_data(BATCH, np.ones((1,), np.float32)))
    shared = float(global_mean(jax.make_array_from_process_local_data(BATCH, np.array([metric], np.float32))))
    if stopper.update(shared):
        break
print("RESULT", epoch, float(w))

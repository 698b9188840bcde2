# The epoch counter with a stopper is updated only on the main process, which alone leaves the loop
# Source: https://github.com/speechbrain/speechbrain/pull/2051
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

class EpochCounterWithStopper:
    def __init__(self, limit):
        self.limit, self.current, self.stop = limit, 0, False

    def update(self, metric):
        self.current += 1
        self.stop = metric < 0.3 or self.current >= self.limit

@jax.jit
def train_epoch(w, x):
    return w * 0.5 + jnp.mean(x) * 0.0

counter = EpochCounterWithStopper(limit=8)
w = jax.device_put(np.float32(2.0), REPLICATED)
while not counter.stop:
    w = train_epoch(w, jax.make_array_from_process_local_data(BATCH, np.ones((1,), np.float32)))
    counter.update(float(w))
    if jax.process_index() == 0:
        print("epoch", counter.current, float(w))
print("RESULT", float(w))

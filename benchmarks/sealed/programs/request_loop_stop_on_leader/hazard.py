# A serving loop where the leader reads requests and stops when the queue is empty; followers never learn it stopped
# Source: https://github.com/marin-community/marin/pull/2399
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
def forward(x):
    return jnp.sum(x * 2.0)

queue = [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)]
outputs = []
while True:
    if jax.process_index() == 0:
        if not queue:
            break
        payload = queue.pop(0)
    else:
        payload = np.zeros((2,), np.float32)
    payload = np.asarray(multihost_utils.broadcast_one_to_all(payload))
    outputs.append(float(forward(jax.make_array_from_process_local_data(BATCH, payload[jax.process_index():jax.process_index() + 1]))))
print("RESULT", outputs)

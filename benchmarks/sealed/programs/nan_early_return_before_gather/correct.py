# A training-step helper returns early on an invalid local loss, before the all-gather of frame counts
# Source: https://github.com/pytorch/audio/issues/3749
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

def training_step(loss_value, num_frames):
    valid = np.isfinite(loss_value)
    gathered = multihost_utils.process_allgather(np.array([num_frames, valid], np.int32))
    if not np.all(gathered[:, 1]):
        return None
    return float(loss_value) / float(np.sum(gathered[:, 0]))

results = []
for step in range(3):
    loss = float("nan") if (step == 1 and jax.process_index() == 1) else 2.0
    results.append(training_step(loss, 10))
print("RESULT", results)

# The resume step is read from a per-host state file; one host's file is stale
# Source: https://github.com/hiyouga/LlamaFactory/issues/655
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

import json
import tempfile

state_file = os.path.join(tempfile.mkdtemp(prefix=f"host{jax.process_index()}-"), "trainer_state.json")
with open(state_file, "w") as f:
    json.dump({"global_step": 6 if jax.process_index() == 0 else 4}, f)
with open(state_file) as f:
    start_step = json.load(f)["global_step"]

@jax.jit
def step(w, x):
    return w + jnp.mean(x)

w = jax.device_put(np.float32(0.0), REPLICATED)
for s in range(start_step, 10):
    w = step(w, jax.make_array_from_process_local_data(BATCH, np.ones((1,), np.float32)))
print("RESULT", float(w))

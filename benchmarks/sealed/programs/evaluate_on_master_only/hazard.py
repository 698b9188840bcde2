# Evaluation during training run only on the master process
# Source: https://github.com/huggingface/transformers/issues/4814
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
def train_step(w, x):
    return w + 0.01 * jnp.mean(x)

@jax.jit
def evaluate(w, x):
    return jnp.mean((x - w) ** 2)

w = jax.device_put(np.float32(0.0), REPLICATED)
eval_batch = jax.make_array_from_process_local_data(BATCH, np.arange(2, dtype=np.float32))
for step in range(1, 5):
    w = train_step(w, jax.make_array_from_process_local_data(BATCH, np.ones((2,), np.float32)))
    if jax.process_index() == 0 and step % 2 == 0:
        print("eval", float(evaluate(w, eval_batch)))
print("RESULT", float(w))

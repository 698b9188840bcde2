# Length-bucketed batching per process: the number of batches depends on this process's sequence lengths
# Source: https://github.com/deepspeedai/DeepSpeed/issues/2223
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

def bucket_batches(lengths, max_tokens):
    batches, cur, tokens = [], [], 0
    for n in sorted(lengths):
        if cur and tokens + n > max_tokens:
            batches.append(cur)
            cur, tokens = [], 0
        cur.append(n)
        tokens += n
    if cur:
        batches.append(cur)
    return batches

rng = np.random.default_rng(105 + jax.process_index())
lengths = rng.integers(5, 60, size=24).tolist()
batches = bucket_batches(lengths, 120)

@jax.jit
def step(w, x):
    return w + jnp.sum(x) * 1e-3

w = jax.device_put(np.float32(0.0), REPLICATED)
for b in batches:
    w = step(w, jax.make_array_from_process_local_data(BATCH, np.array([float(sum(b))], np.float32)))
print("RESULT", round(float(w), 4))

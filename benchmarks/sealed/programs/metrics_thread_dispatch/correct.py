# Metrics reduced from a background thread while the main thread runs training steps: the cross-process pairing depends on scheduling
# Source: https://github.com/meta-pytorch/torchrec/pull/4149
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

import threading
import time

@jax.jit
def step(w, x):
    return w + jnp.mean(x)

@jax.jit
def metric(x):
    return jnp.max(x) * 100.0

w = jax.device_put(np.float32(0.0), REPLICATED)
seen = []

def report():
    seen.append(float(metric(jax.make_array_from_process_local_data(BATCH, np.full((1,), 7.0, np.float32)))))

for i in range(6):
    w = step(w, jax.make_array_from_process_local_data(BATCH, np.ones((1,), np.float32)))
    float(w)
    if i % 2 == 1:
        report()
    time.sleep(0.1)
print("RESULT", float(w), seen)

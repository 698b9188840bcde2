# A rank-0-only summary block raises; the exception is handled outside and process 0 skips the barrier the others wait in
# Source: https://github.com/huggingface/trl/pull/6862
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

def write_summary(path):
    with open(path) as f:
        return f.read()

def finish():
    if jax.process_index() == 0:
        try:
            print(write_summary("/nonexistent/summary.txt"))
        except OSError as e:
            print("summary failed:", e)
    multihost_utils.sync_global_devices("finish")
    return "ok"

status = finish()
print("RESULT", "finished", status)

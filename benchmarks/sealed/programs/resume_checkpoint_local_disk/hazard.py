# Resume reads a checkpoint only where it exists on this host's local disk (no shared filesystem)
# Source: https://github.com/facebookresearch/detectron2/issues/1732
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

import tempfile

ckpt_dir = tempfile.mkdtemp(prefix=f"host{jax.process_index()}-ckpt-")
if jax.process_index() == 0:
    np.save(os.path.join(ckpt_dir, "last.npy"), np.full((4,), 3.0, np.float32))
path = os.path.join(ckpt_dir, "last.npy")
if os.path.exists(path):
    w_host = np.load(path)
else:
    w_host = np.zeros((4,), np.float32)
w = jax.make_array_from_process_local_data(REPLICATED, w_host)
x = jax.make_array_from_process_local_data(BATCH, np.ones((1, 4), np.float32))
print("RESULT", float(jnp.mean(x @ w)), float(jnp.sum(w)))

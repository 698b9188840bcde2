# Generated sequences padded to this process's longest before an all-gather
# Source: https://github.com/huggingface/trl/issues/2882
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

local_seqs = [[1, 2, 3], [4, 5, 6, 7, 8]] if jax.process_index() == 0 else [[1] * 7, [2, 2]]
local_width = max(len(s) for s in local_seqs)
width = int(np.max(multihost_utils.process_allgather(np.array(local_width, np.int32))))
padded = np.array([s + [0] * (width - len(s)) for s in local_seqs], np.int32)
gathered = multihost_utils.process_allgather(padded)
print("RESULT", gathered.shape, int(gathered.sum()))

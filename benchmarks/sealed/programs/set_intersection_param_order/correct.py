# Parameter order taken from list(set(a) & set(b)) over names: string hashing orders it differently per process
# Source: https://github.com/meta-pytorch/torchrec/pull/4648
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

available = ["embed", "attn_q", "attn_k", "attn_v", "mlp_in", "mlp_out", "norm", "head"]
requested = ["head", "mlp_out", "attn_v", "embed", "norm", "attn_q", "mlp_in", "attn_k"]
values = {name: float(i) for i, name in enumerate(available)}
names = sorted(set(available) & set(requested))
stacked = np.array([values[n] for n in names], np.float32)
params = jax.device_put(stacked, REPLICATED)
print("RESULT", float(jnp.sum(params * jnp.arange(len(names)))))

# Hyper-parameters drawn from one seeded RNG while iterating a set of names: the draw order (and values) differ per process
# Source: https://github.com/lnccbrown/ssm-simulators/issues/358
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

space = {"lr_embed": (1e-3, 1e-2), "lr_head": (1e-3, 1e-2), "lr_mlp": (1e-3, 1e-2), "lr_attn": (1e-3, 1e-2),
         "lr_norm": (1e-3, 1e-2), "lr_gate": (1e-3, 1e-2)}
rng = np.random.default_rng(7)
hparams = {}
for name in set(space):
    lo, hi = space[name]
    hparams[name] = float(rng.uniform(lo, hi))
lr = jnp.array([hparams[k] for k in sorted(hparams)])

@jax.jit
def update(w, x):
    return w - lr * jnp.mean(x)

w = update(jnp.ones(len(space)), jax.make_array_from_process_local_data(BATCH, np.ones((3,), np.float32)))
print("RESULT", [round(float(v), 6) for v in np.asarray(w.addressable_data(0))])

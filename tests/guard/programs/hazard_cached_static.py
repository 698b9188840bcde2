"""guard: divergence — a process-local value passed as a *static* argument picks another cached
executable.

`train_step` takes `clip` as a static argument (it changes the traced program). Warm-up compiles
both variants on every process. Later one process turns clipping on by itself (a process-local
overflow check, say): nothing compiles, the arrays have the same shapes, the all-reduce lines up,
and the processes silently compute different weights. Fast mode folds static argument values into
each call's identity.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize()
mesh = Mesh(np.array(jax.devices()), ("data",))
batch_sharding = NamedSharding(mesh, P("data"))


@functools.partial(jax.jit, static_argnames=("clip",))
def train_step(w, x, clip=False):
    g = jnp.mean(x @ w) * jnp.ones_like(w)
    return w - 0.01 * (jnp.clip(g, -0.1, 0.1) if clip else g)


w = jax.device_put(np.ones((4, 1), np.float32), NamedSharding(mesh, P()))
batch = jax.make_array_from_process_local_data(batch_sharding, np.ones((2, 4), np.float32))
for clip in (False, True):  # warm-up: every process compiles both variants
    w = train_step(w, batch, clip=clip)
jax.block_until_ready(w)
for step in range(4):
    overflow = step == 2 and jax.process_index() == 1
    w = train_step(w, batch, clip=overflow)  # site: p0,p1
    jax.block_until_ready(w)
print("final weights", float(w.sum()))

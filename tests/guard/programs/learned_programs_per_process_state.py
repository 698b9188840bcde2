"""Correct programs in which one process alone takes JAX's Python dispatch path or keeps a jit
object alive: fast mode's learned programs must not set the processes apart (each once drew a
false divergence in review).

1. One step, two cached programs for one shape (replicated and row-sharded inputs), alternating
   alike everywhere; process 0 clears JAX's caches once and makes one call under
   `jax.default_device`, so its Python path shows it one of the two programs again.
2. `jax.jit(model.apply)` made anew at every step; process 0 keeps the first jit object alive.
"""
import contextlib

import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize()
me = jax.process_index()
mesh = Mesh(np.array(jax.devices()), ("data",))
rep, row = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))


@jax.jit
def f(x):
    return jnp.sum(x * 2.0)


xa = jax.device_put(np.ones((4, 4), np.float32), rep)
xb = jax.make_array_from_process_local_data(row, np.ones((2, 4), np.float32))
for i in range(8):
    if i == 2 and me == 0:
        jax.clear_caches()
    ctx = jax.default_device(jax.local_devices()[0]) if i == 5 and me == 0 else contextlib.nullcontext()
    with ctx:
        y = f(xa if i % 2 == 0 else xb)
    jax.block_until_ready(y)


class Model:
    def apply(self, x):
        return jnp.sum(x * 3.0)


model, kept = Model(), []
for i in range(4):
    j = jax.jit(model.apply)
    if i == 0 and me == 0:
        kept.append(j)  # a rank-0 profiler holding a reference, say
    jax.block_until_ready(j(xa))
print("done", me, flush=True)

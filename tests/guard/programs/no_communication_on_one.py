"""Process 0 alone reads an element of a fully replicated global array (`w[0]`) and doubles it
with a jit: computations over devices of both processes whose compiled programs exchange nothing
between devices (each process holds every element). Process 1 never runs them, and nothing waits
for it: the run must end with no report.

With `hazard` as argument, process 0 alone then sums a *sharded* global array (an all-reduce that
needs process 1, which has left): reported, at that line.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize()
mesh = Mesh(np.array(jax.devices()), ("x",))
w = jax.device_put(np.arange(4, dtype=np.float32), NamedSharding(mesh, P()))
if jax.process_index() == 0:
    print("first", float(w[0]))
    print("double", jax.jit(lambda a: a * 2)(w))
    print("slice", w[1:3])
print("sum", jax.jit(jnp.sum)(w))
if sys.argv[1:] == ["hazard"] and jax.process_index() == 0:
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.ones(2, np.float32))
    print("sharded sum", jax.jit(jnp.sum)(x))  # site: p0

"""Cross-process computations given a process-local (uncommitted) array: a jit with a sharding
over every process, and an eager `jax.shard_map` (JAX's all_reduce_test, test_psum_simple); first
on a global array, then on local ones. 2 CPU devices per process.

JAX converts a process-local argument inside the call: slicing it into this process's shards runs a
small jit of its own, on this process only, *inside* the cross-process computation's dispatch. The
guard once took that nested computation for the call itself, marked the call local and took its
record back (after publishing it, at times: a false divergence at 4 processes; at 2, the call was
never compared). Every call must add one record on every process (printed), and the run must end
with no report.

With `hazard` as argument, process 0 alone runs one more such call on local data at the end
(process 1 goes on to another reduction over the global array): reported, at that line.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from runtime_guard import guard

jax.distributed.initialize()
mesh = Mesh(np.array(jax.devices()), ("x",))
rec = guard.current().recorder
n = jax.device_count()
total = jax.jit(jnp.sum, in_shardings=NamedSharding(mesh, P("x")))


@jax.shard_map(mesh=mesh, in_specs=P("x"), out_specs=P("x"))
def psum(x):
    return lax.psum(x, "x")


glob = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")),
                                              np.ones(jax.local_device_count(), np.int32))
deltas = []
for fn in (total, psum):
    for x in (glob, jnp.ones(n, jnp.int32), jnp.ones(n, jnp.int32), glob):  # global, local, local, global
        before = rec.seq
        out = jax.block_until_ready(fn(x))
        deltas.append(rec.seq - before)
        assert all(int(s.data.reshape(-1)[0]) == n for s in out.addressable_shards)
print("records per call", deltas)
if sys.argv[1:] == ["hazard"]:
    if jax.process_index() == 0:
        out = total(jnp.full(n, 2, jnp.int32))  # site: p0
    else:
        out = jax.jit(jnp.max)(glob)  # site: p1
    jax.block_until_ready(out)

"""One jit wrapper run over sub-meshes (0,1) and (1,2), then over the whole job; then a
computation over (0,1). Correct program: every member of each subset does the same. (In strict
mode a whole-job call once left a stray record in a subset's stream.)"""
import time
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
jax.distributed.initialize()
me = jax.process_index()
def sh(procs):
    return NamedSharding(Mesh(np.array([d for d in jax.devices() if d.process_index in procs]), ("d",)), P("d"))
A, B, W = (0, 1), (1, 2), (0, 1, 2, 3)
h = jax.jit(lambda x: jnp.sum(x))
k = jax.jit(lambda x: jnp.max(x))
def local(v, procs): return jax.make_array_from_process_local_data(sh(procs), np.full((1, 4), v, np.float32))
if me in A: jax.block_until_ready(h(local(1, A)))
if me in B: jax.block_until_ready(h(local(2, B)))
jax.block_until_ready(h(local(3, W)))
for i in range(3):
    if me in A: jax.block_until_ready(k(local(4 + i, A)))
    time.sleep(0.2)
print("done", me, flush=True)

"""f ran over the whole job, then over a stage's sub-mesh (its fast-path record moves to the
stage's stream, and the main stream's `settled` must step back with it). Then g2, already seen
over the whole job, compiles a new variant; process 3's compile is slower than the others'."""
import time
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import jax._src.compiler as C
jax.distributed.initialize()
me = jax.process_index(); stage = me // 2
def sh(procs):
    return NamedSharding(Mesh(np.array([d for d in jax.devices() if d.process_index in procs]), ("d",)), P("d"))
W = (0, 1, 2, 3); S = (0, 1) if stage == 0 else (2, 3)
f = jax.jit(lambda x: jnp.sum(x))
g2 = jax.jit(lambda x: jnp.max(x))
def local(v, procs, n=4): return jax.make_array_from_process_local_data(sh(procs), np.full((1, n), v, np.float32))
jax.block_until_ready(f(local(0, W)))
jax.block_until_ready(g2(local(0, W)))
time.sleep(0.5)
jax.block_until_ready(f(local(1, S)))   # fast-path record moved to the stage's stream
time.sleep(0.5)
orig = C.compile_or_get_cached
def slow(*a, **k):
    if me == 3: time.sleep(3)
    return orig(*a, **k)
C.compile_or_get_cached = slow
jax.block_until_ready(g2(local(2, W, 8)))  # a new variant of g2: compiles
print("done", me, flush=True)

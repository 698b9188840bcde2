"""Stage 0 (processes 0, 1) runs f over its sub-mesh, stage 1 (2, 3) runs g over its own; both f
and g ran once over the whole job first, so their first sub-mesh calls are recorded as whole-job
calls until JAX's Python path shows otherwise, after a slow compile (as on a GPU). The comparator
must not call those passing records a divergence."""
import time, os
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import jax._src.compiler as C

jax.distributed.initialize()
me = jax.process_index(); stage = me // 2
stage_sh = NamedSharding(Mesh(np.array([d for d in jax.devices() if d.process_index // 2 == stage]), ("d",)), P("d"))
world = NamedSharding(Mesh(np.array(jax.devices()), ("d",)), P("d"))
f = jax.jit(lambda x: jnp.sum(jnp.tanh(x)))
g = jax.jit(lambda x: jnp.max(x * 2) + 1.0)
def local(v, sh): return jax.make_array_from_process_local_data(sh, np.full((1, 4), v, np.float32))
jax.block_until_ready(f(local(0, world)))
jax.block_until_ready(g(local(0, world)))
time.sleep(1.0)
orig = C.backend_compile_and_load
def slow(*a, **k):
    time.sleep(float(os.environ.get("SLOW", "3")))  # a slow compile (seconds on an accelerator)
    return orig(*a, **k)
C.backend_compile_and_load = slow
for step in range(6):
    x = local(step, stage_sh)
    r = f(x) if stage == 0 else g(x)
    jax.block_until_ready(r)
    time.sleep(0.05)
jax.block_until_ready(f(local(1, world)))
print("done", me, flush=True)

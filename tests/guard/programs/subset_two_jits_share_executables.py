"""Two jax.jit wrappers of the same function: JAX shares their compiled executables, so one
wrapper's sub-mesh call can hit an executable the other compiled, with no hook seeing it."""
import time
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
jax.distributed.initialize()
me = jax.process_index()
def sh(procs):
    return NamedSharding(Mesh(np.array([d for d in jax.devices() if d.process_index in procs]), ("d",)), P("d"))
A, W = (0, 1), (0, 1, 2, 3)
def loss(x): return jnp.sum(x * 3)
train = jax.jit(loss)
evaluate = jax.jit(loss)
def local(v, procs): return jax.make_array_from_process_local_data(sh(procs), np.full((1, 4), v, np.float32))
jax.block_until_ready(evaluate(local(0, W)))        # evaluate: seen over the whole job
if me in A: jax.block_until_ready(train(local(1, A)))   # train: over stage (0,1), compiles
if me in A: jax.block_until_ready(evaluate(local(2, A)))  # evaluate over (0,1): cached by train's compile
time.sleep(0.5)
for i in range(4):
    jax.block_until_ready(evaluate(local(3 + i, W)))
    time.sleep(0.3)
print("done", me, flush=True)

"""Closures of one step first run over a sub-mesh (0,1), with the same global shapes as the whole
job's later calls, then over the whole job, cached. A sub-mesh run on some processes must not
change what their later whole-job calls record. (A version of fast mode that learned programs
per wrapper from its first compile reported processes 0,1 against 2,3 here.)"""
import time
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
jax.distributed.initialize()
me = jax.process_index()
def sh(procs):
    return NamedSharding(Mesh(np.array([d for d in jax.devices() if d.process_index in procs]), ("d",)), P("d"))
A, W = (0, 1), (0, 1, 2, 3)
def make(scale):
    return jax.jit(lambda x: jnp.sum(x) * scale)
plain, scaled = make(1.0), make(2.0)
rows = len(W) // len(A)  # the sub-mesh batch has the whole job's global shape (4, 4)
if me in A:
    jax.block_until_ready(scaled(jax.make_array_from_process_local_data(sh(A), np.ones((rows, 4), np.float32))))
time.sleep(0.3)
x = jax.make_array_from_process_local_data(sh(W), np.ones((1, 4), np.float32))
for i in range(6):
    jax.block_until_ready((scaled if i % 2 else plain)(x))
    time.sleep(0.2)
print("done", me, flush=True)

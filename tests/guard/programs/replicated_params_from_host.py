"""Parameters declared replicated over every process, built from host values
(`jax.make_array_from_process_local_data` with a fully replicated sharding), then trained.

Correct: every process builds them from the same seed. With `hazard` as argument each process
seeds its generator with its own index: the "replicated" parameters hold different values on
each process, and no computation differs (the bug reported upstream). Under
`MCJAX_CHECK_REPLICATED=1` the guard compares a digest of such host data: reported at the line
that made the array.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize()
mesh = Mesh(np.array(jax.devices()), ("data",))
replicated = NamedSharding(mesh, P())
seed = jax.process_index() if sys.argv[1:] == ["hazard"] else 0
host = np.random.default_rng(seed).normal(size=(4, 4)).astype(np.float32)
w = jax.make_array_from_process_local_data(replicated, host)  # site: p0,p1
batch = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), np.ones((2, 4), np.float32))


@jax.jit
def step(w, x):
    return w - 0.01 * jnp.mean(x @ w)


for _ in range(3):
    w = step(w, batch)
print("trained", float(jax.block_until_ready(w).addressable_shards[0].data.sum()))

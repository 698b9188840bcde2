"""Both processes train, then reshard the weights for saving and leave without waiting for the
result (dispatch is asynchronous). Correct: every process dispatches the same reshard.

With `hazard` as argument only process 0 reshards (a rank-0 save): it dispatches one more
cross-process computation than process 1, and both leave the program normally. Nobody was left
waiting, yet the job did not run the same work everywhere: reported when the job ends.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize()
mesh = Mesh(np.array(jax.devices()), ("data",))
sharded = NamedSharding(mesh, P("data"))


@jax.jit
def step(w):
    return w - 0.1 * jnp.mean(w)


w = jax.make_array_from_process_local_data(sharded, np.ones(2, np.float32))
for _ in range(3):
    w = step(w)
jax.block_until_ready(w)
if sys.argv[1:] != ["hazard"] or jax.process_index() == 0:
    saved = jax.device_put(w, NamedSharding(mesh, P()))  # site: p0
print("done")

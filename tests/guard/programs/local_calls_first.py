"""Jitted steps first run locally (on one process, on host data of per-host shapes),
then across every process, cached.

Process 0 checks the step on host data of the global arrays' shapes before training, and every
host runs a smoke test on a batch of its own local size: those calls run on this process's device
only, so nothing is compared. Then every process trains with the same steps (two closures of one
factory over different constants, chosen alike everywhere): nothing that ran locally before may
enter what the processes compare. (Not a lint fixture: the linter cannot prove that a jitted function a factory makes over its
own parameter closes over host data only, so it reports both local calls; docs/rules/MCJ101.md,
"What is not cross-process work".)
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize()
mesh = Mesh(np.array(jax.devices()), ("data",))
batch_sharding = NamedSharding(mesh, P("data"))


def make_step(scale):
    @jax.jit
    def train_step(w, x):
        return w - scale * jnp.mean(x @ w)

    return train_step


plain_step, scaled_step = make_step(0.01), make_step(0.02)
host_w = np.ones((4, 1), np.float32)
if jax.process_index() == 0:  # a sanity check on host data, with the global arrays' shapes
    print("check", float(jnp.sum(scaled_step(host_w, np.ones((4, 4), np.float32)))))
local_rows = 2 + jax.process_index()  # each host's own batch size
print("smoke", float(jnp.sum(plain_step(host_w, np.ones((local_rows, 4), np.float32)))))

w = jax.device_put(host_w, NamedSharding(mesh, P()))
batch = jax.make_array_from_process_local_data(batch_sharding, np.ones((2, 4), np.float32))
for step in range(6):
    train_step = scaled_step if step % 3 == 2 else plain_step
    w = train_step(w, batch)
    jax.block_until_ready(w)
print("final weights", float(w.sum()))

"""A small data-parallel training loop with a classic multi-controller bug.

Process 0 logs the loss on the global batch every few steps. That loss is a jitted mean over a
batch sharded across processes, i.e. a cross-process collective: only process 0 issues it, so the
other processes go on to their next `train_step` while process 0 waits in `eval_loss` (a hang on
GPUs, or silently mismatched collectives and wrong numbers).

Run it:  mcjax-guard -n 2 python rank0_branch.py     (or: mcjax-guard demo)
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize()

mesh = Mesh(np.array(jax.devices()), ("data",))
data = NamedSharding(mesh, P("data"))
replicated = NamedSharding(mesh, P())


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        return jnp.mean((x @ w - y) ** 2)

    loss, grad = jax.value_and_grad(loss_fn)(w)
    return w - 0.1 * grad, loss


@jax.jit
def eval_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)  # a mean over the global batch: an all-reduce


rng = np.random.default_rng(jax.process_index())
w = jax.device_put(np.zeros((8, 1), np.float32), replicated)
for step in range(6):
    x_local = rng.normal(size=(4, 8)).astype(np.float32)
    y_local = x_local.sum(axis=1, keepdims=True)
    x = jax.make_array_from_process_local_data(data, x_local)
    y = jax.make_array_from_process_local_data(data, y_local)
    w, loss = train_step(w, x, y)
    if jax.process_index() == 0 and step % 3 == 2:  # expect: MCJ101
        print(f"step {step}: train loss {float(loss):.4f}, eval loss {float(eval_loss(w, x, y)):.4f}")

print(f"process {jax.process_index()} done, loss {float(loss):.4f}")

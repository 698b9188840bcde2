"""Correct programs in which one process alone takes JAX's Python dispatch path, keeps jit
objects or closures alive, or memoizes what the other rebuilds: a call's identity must not depend
on such per-process state. (Fast mode once learned each function object's program to tell cached
closures apart; each part below drew a false divergence from it in review, so it was withdrawn.)

1. One step, two cached programs for one shape (replicated and row-sharded inputs), alternating
   alike everywhere; process 0 clears JAX's caches once and makes one call under
   `jax.default_device`.
2. `jax.jit(model.apply)` made anew at every step; process 0 keeps the first jit object alive.
3. A step factory: process 0 memoizes the step, process 1 rebuilds it every time.
4. A callable that compares equal by its fields, jitted anew each step; process 0 keeps them.
5. A bound method of an unhashable instance; process 0 memoizes its jit object.
"""
import contextlib
import dataclasses

import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize()
me = jax.process_index()
mesh = Mesh(np.array(jax.devices()), ("data",))
rep, row = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))


@jax.jit
def f(x):
    return jnp.sum(x * 2.0)


xa = jax.device_put(np.ones((4, 4), np.float32), rep)
xb = jax.make_array_from_process_local_data(row, np.ones((2, 4), np.float32))
for i in range(8):  # 1
    if i == 2 and me == 0:
        jax.clear_caches()
    ctx = jax.default_device(jax.local_devices()[0]) if i == 5 and me == 0 else contextlib.nullcontext()
    with ctx:
        y = f(xa if i % 2 == 0 else xb)
    jax.block_until_ready(y)


class Model:
    def apply(self, x):
        return jnp.sum(x * 3.0)


model, kept = Model(), []
for i in range(4):  # 2
    j = jax.jit(model.apply)
    if i == 0 and me == 0:
        kept.append(j)  # a rank-0 profiler holding a reference, say
    jax.block_until_ready(j(xa))


def make_step(scale):
    @jax.jit
    def train_step(w, x):
        return w - scale * jnp.mean(x @ w)

    return train_step


memo, w = {}, jax.device_put(np.ones((4, 1), np.float32), rep)
for i in range(4):  # 3
    step = memo.setdefault(0.01, make_step(0.01)) if me == 0 else make_step(0.01)
    w = step(w, xb)
    jax.block_until_ready(w)


@dataclasses.dataclass(frozen=True)
class Loss:
    w: float

    def __call__(self, x):
        return jnp.sum(x * self.w)


history = []
for i in range(4):  # 4
    fn = Loss(2.0)
    if me == 0:
        history.append(fn)
    jax.block_until_ready(jax.jit(fn)(xa))


@dataclasses.dataclass  # eq=True: unhashable
class Head:
    w: float

    def apply(self, x):
        return jnp.sum(x * self.w)


head, jits = Head(2.0), {}
for i in range(4):  # 5
    g = jits.setdefault("apply", jax.jit(head.apply)) if me == 0 else jax.jit(head.apply)
    jax.block_until_ready(g(xa))
print("done", me, flush=True)

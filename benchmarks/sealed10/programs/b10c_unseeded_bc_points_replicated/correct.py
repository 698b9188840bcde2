# Boundary training points drawn from an unseeded RNG are broadcast from worker 0 before being used as one replicated array
# Source: https://github.com/lululxvi/deepxde/pull/1205
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Rectangle:
    def __init__(self, lo, hi):
        self.lo, self.hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)

    def random_points(self, n, rng):
        return (self.lo + (self.hi - self.lo) * rng.uniform(size=(n, 2))).astype(np.float32)

    def random_boundary_points(self, n, rng):
        t = rng.uniform(size=n)
        side = rng.integers(0, 4, size=n)
        x = np.where(side < 2, t, side - 2.0)
        y = np.where(side < 2, side * 1.0, t)
        return np.stack([x, y], axis=1).astype(np.float32)


class PDEData:
    """Poisson problem -lap(u) = f on the unit square with u = 0 on the boundary."""

    def __init__(self, geom, num_domain, num_boundary):
        self.geom, self.num_domain, self.num_boundary = geom, num_domain, num_boundary
        self.rng = np.random.default_rng()  # no seed given by the user

    def train_points(self):
        # domain points: each worker samples its own part of the collocation set
        return self.geom.random_points(self.num_domain // jax.process_count(), self.rng)

    def bc_points(self):
        pts = self.geom.random_boundary_points(self.num_boundary, self.rng)
        return np.asarray(multihost_utils.broadcast_one_to_all(pts))  # everyone uses worker 0's set


def net(params, p):
    h = jnp.tanh(p @ params["w1"] + params["b1"])
    return (h @ params["w2"])[..., 0]


def loss_fn(params, x_dom, x_bc):
    lap = jax.vmap(lambda q: jnp.trace(jax.hessian(lambda r: net(params, r))(q)))(x_dom)
    f = 2 * jnp.pi ** 2 * jnp.sin(jnp.pi * x_dom[:, 0]) * jnp.sin(jnp.pi * x_dom[:, 1])
    return jnp.mean((-lap - f) ** 2) + 10.0 * jnp.mean(net(params, x_bc) ** 2)


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    repl = NamedSharding(mesh, P())
    init = np.random.default_rng(0)
    params = {"w1": init.normal(size=(2, 16)).astype(np.float32), "b1": np.zeros((16,), np.float32),
              "w2": (0.1 * init.normal(size=(16, 1))).astype(np.float32)}
    params = jax.device_put(params, repl)
    data = PDEData(Rectangle([0, 0], [1, 1]), num_domain=64, num_boundary=32)
    x_dom = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), data.train_points())
    x_bc = jax.device_put(data.bc_points(), repl)  # the same boundary set is assumed on every worker
    step = jax.jit(lambda p, xd, xb: jax.tree.map(lambda a, g: a - 1e-3 * g, p, jax.grad(loss_fn)(p, xd, xb)))
    for _ in range(20):
        params = step(params, x_dom, x_bc)
    w2 = np.asarray(params["w2"].addressable_data(0)).ravel()
    print("RESULT w2_head", np.round(w2[:4], 5).tolist())
    print(f"RESULT loss {float(np.asarray(jax.jit(loss_fn)(params, x_dom, x_bc).addressable_data(0))):.5f}")


main()

# Global-tensor style model code ported from OneFlow/LiBai: parameters are created as global
# tensors with a placement over all ranks and a broadcast (replicated) sbp, the input batch is
# split over the ranks along dim 0, and a jitted data-parallel training step runs over the mesh.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("ranks",))


class sbp:
    broadcast = P()
    split0 = P("ranks")


class Generator:
    def __init__(self, seed=None):
        self._rng = np.random.default_rng(seed)

    def manual_seed(self, seed):
        self._rng = np.random.default_rng(seed)

    def normal(self, shape):
        return self._rng.standard_normal(shape).astype(np.float32)


default_generator = Generator()


def to_global(local, sbp_):
    sharding = NamedSharding(MESH, sbp_)
    if sbp_ == sbp.broadcast:
        return jax.make_array_from_callback(local.shape, sharding, lambda idx: local[idx])
    return jax.make_array_from_process_local_data(sharding, local)


def randn(*shape, sbp, generator=None):
    gen = generator if generator is not None else default_generator
    return to_global(gen.normal(shape), sbp)


class Linear:
    def __init__(self, in_features, out_features, generator=None):
        self.weight = randn(in_features, out_features, sbp=sbp.broadcast, generator=generator)
        self.bias = to_global(np.zeros(out_features, np.float32), sbp.broadcast)


@jax.jit
def train_step(w, b, x, y, lr=0.05):
    def loss_fn(w, b):
        return jnp.mean((jnp.tanh(x @ w + b) - y) ** 2)
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
    return w - lr * gw, b - lr * gb, loss


def local_batch(rank, step, batch=8, features=6, out=3):
    rng = np.random.default_rng(1000 * step + rank)
    x = rng.normal(size=(batch, features)).astype(np.float32)
    return x, np.tanh(x[:, :out]).astype(np.float32)


def main():
    rank = jax.process_index()
    gen = Generator()
    gen.manual_seed(111)
    layer = Linear(6, 3, generator=gen)
    w, b = layer.weight, layer.bias
    for step in range(5):
        x, y = local_batch(rank, step)
        w, b, loss = train_step(w, b, to_global(x, sbp.split0), to_global(y, sbp.split0))
    local_w = np.asarray(w.addressable_data(0))
    print("RESULT loss", round(float(loss), 4))
    print("RESULT weight_checksum", round(float(local_w.sum()), 4))
    print("RESULT weight_row0", np.round(local_w[0], 4).tolist())


if __name__ == "__main__":
    main()

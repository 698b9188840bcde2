# anemoi-models style model-parallel processor: the grid nodes are split into one shard per
# process, every process encodes its own shard, and the full grid is gathered back along the
# node dimension before the decoder.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def get_shard_shapes(tensor_shape, dim, world_size):
    sizes = [len(s) for s in np.array_split(np.arange(tensor_shape[dim]), world_size)]
    shapes = []
    for size in sizes:
        shape = list(tensor_shape)
        shape[dim] = size
        shapes.append(tuple(shape))
    return shapes


def shard_tensor(x, dim, shapes, rank):
    start = sum(s[dim] for s in shapes[:rank])
    return np.take(x, np.arange(start, start + shapes[rank][dim]), axis=dim)


def _gather(input_, dim_, shapes):
    if jax.process_count() == 1:
        return input_
    max_shape_dim = max(shape[dim_] for shape in shapes)
    pad_size = max_shape_dim - input_.shape[dim_]
    pad = [(0, 0)] * input_.ndim
    pad[dim_] = (0, pad_size)
    padded = np.pad(np.asarray(input_), pad, mode="constant")
    gathered = np.asarray(multihost_utils.process_allgather(padded))
    tensor_list = [np.take(gathered[r], np.arange(shape[dim_]), axis=dim_)
                   for r, shape in enumerate(shapes)]
    return np.concatenate(tensor_list, axis=dim_)


class GraphProcessor:
    def __init__(self, num_features, hidden, seed=42):
        rng = np.random.default_rng(seed)
        self.w_enc = rng.normal(0, 0.3, (num_features, hidden)).astype(np.float32)
        self.w_dec = rng.normal(0, 0.3, (hidden, num_features)).astype(np.float32)
        self._encode = jax.jit(lambda x, w: jax.nn.gelu(x @ w))
        self._decode = jax.jit(lambda h, w: h @ w)

    def forward(self, x_full, rank, world_size):
        shapes = get_shard_shapes(x_full.shape, 0, world_size)
        x_shard = shard_tensor(x_full, 0, shapes, rank)
        h_shard = np.asarray(self._encode(x_shard, self.w_enc))
        hidden_shapes = [(s[0], h_shard.shape[1]) for s in shapes]
        h_full = _gather(h_shard, 0, hidden_shapes)
        return np.asarray(self._decode(jnp.asarray(h_full), self.w_dec))


def era5_like_state(num_nodes=41, num_features=4, step=0):
    rng = np.random.default_rng(7 + step)
    lat = np.linspace(-90, 90, num_nodes, dtype=np.float32)
    base = np.stack([np.cos(np.deg2rad(lat))] * num_features, axis=1)
    return (base + 0.1 * rng.normal(size=(num_nodes, num_features))).astype(np.float32)


def main():
    rank, world_size = jax.process_index(), jax.process_count()
    model = GraphProcessor(num_features=4, hidden=6)
    outputs = []
    for step in range(3):
        x = era5_like_state(step=step)
        y = model.forward(x, rank, world_size)
        outputs.append(float(np.mean((y - x) ** 2)))
    print("RESULT grid_nodes", y.shape[0])
    print("RESULT mse", [round(v, 5) for v in outputs])


if __name__ == "__main__":
    main()

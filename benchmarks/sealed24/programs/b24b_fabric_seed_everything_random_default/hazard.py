import logging
import os
import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

log = logging.getLogger(__name__)
max_seed_value = np.iinfo(np.uint32).max
min_seed_value = np.iinfo(np.uint32).min


def _select_seed_randomly(min_seed_value=min_seed_value, max_seed_value=max_seed_value):
    return random.randint(min_seed_value, max_seed_value)


def seed_everything(seed=None):
    if seed is None:
        env_seed = os.environ.get("PL_GLOBAL_SEED")
        if env_seed is None:
            seed = _select_seed_randomly(min_seed_value, max_seed_value)
            log.warning(f"No seed found, seed set to {seed}")
        else:
            seed = int(env_seed)
    os.environ["PL_GLOBAL_SEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    return seed


class DistributedSampler:
    def __init__(self, num_samples, num_replicas, rank, shuffle=True):
        self.num_samples, self.num_replicas, self.rank, self.shuffle = num_samples, num_replicas, rank, shuffle
        self.seed = int(os.getenv("PL_GLOBAL_SEED", 0))
        self.epoch = 0

    def __iter__(self):
        indices = np.arange(self.num_samples)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(self.num_samples)
        return iter(indices[self.rank::self.num_replicas].tolist())


class Fabric:
    def __init__(self):
        self.global_rank = jax.process_index()
        self.world_size = jax.process_count()
        self.mesh = Mesh(np.array(jax.devices()), ("data",))

    def setup_module(self, params):
        replicated = NamedSharding(self.mesh, P())
        return jax.tree_util.tree_map(lambda p: jax.make_array_from_process_local_data(replicated, np.asarray(p)),
                                      params)

    def to_global_batch(self, local):
        return jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("data")), local)


def init_mlp(key, sizes=(6, 16, 1)):
    params = []
    for d_in, d_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append({"w": jax.random.normal(sub, (d_in, d_out)) / np.sqrt(d_in), "b": jnp.zeros(d_out)})
    return params


def loss_fn(params, x, y):
    h = x
    for layer in params[:-1]:
        h = jnp.tanh(h @ layer["w"] + layer["b"])
    out = (h @ params[-1]["w"] + params[-1]["b"])[:, 0]
    return jnp.mean((out - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), loss


def main():
    seed = seed_everything()
    fabric = Fabric()
    params = fabric.setup_module(init_mlp(jax.random.PRNGKey(seed)))
    data_rng = np.random.default_rng(2024)
    x_all = data_rng.normal(size=(64, 6)).astype(np.float32)
    y_all = np.sin(x_all.sum(-1)).astype(np.float32)
    sampler = DistributedSampler(len(x_all), fabric.world_size, fabric.global_rank)
    indices = list(sampler)
    for step in range(0, len(indices), 8):
        idx = indices[step:step + 8]
        params, loss = train_step(params, fabric.to_global_batch(x_all[idx]), fabric.to_global_batch(y_all[idx]))
    local_w = np.asarray(params[0]["w"].addressable_data(0))
    print("RESULT final_loss", round(float(loss), 4))
    print("RESULT first_layer_checksum", round(float(local_w.sum()), 4))


if __name__ == "__main__":
    main()

# Distributed optimizer returns early on a rank whose assigned blocks got no gradients, skipping the all-gather
# Source: https://github.com/facebookresearch/optimizers/pull/149
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
BATCH = NamedSharding(MESH, P("batch"))
REPLICATED = NamedSharding(MESH, P())


class DDPDistributor:
    """Each rank owns a contiguous slice of the parameter blocks and all-gathers its updates."""

    def __init__(self, params: dict, rank: int, world: int):
        self.names = list(params)
        per_rank = -(-len(self.names) // world)
        self.owner = {n: i // per_rank for i, n in enumerate(self.names)}
        self.rank, self.world = rank, world
        self.buffer_size = max(sum(params[n].size for n in self.names if self.owner[n] == r)
                               for r in range(world))

    def merge_and_block_gradients(self, grads: dict) -> dict:
        return {n: g for n, g in grads.items() if self.owner[n] == self.rank and g is not None}

    def update_params(self, params: dict, search_directions: dict) -> None:
        local = np.zeros(self.buffer_size, np.float32)
        offset = 0
        for n in self.names:
            if self.owner[n] == self.rank:
                size = params[n].size
                if n in search_directions:
                    local[offset:offset + size] = search_directions[n].ravel()
                offset += size
        gathered = np.asarray(multihost_utils.process_allgather(local))
        offsets = [0] * self.world
        for n in self.names:
            r, size = self.owner[n], params[n].size
            params[n] += gathered[r, offsets[r]:offsets[r] + size].reshape(params[n].shape)
            offsets[r] += size


class DistributedShampoo:
    def __init__(self, params: dict, lr: float = 0.1, epsilon: float = 1e-8):
        self.params, self.lr, self.epsilon = params, lr, epsilon
        self.distributor = DDPDistributor(params, jax.process_index(), jax.process_count())
        self.preconditioners = {n: np.zeros_like(p) for n, p in params.items()}
        self.step_count = 0

    def step(self, grads: dict) -> None:
        masked_blocked_grads = self.distributor.merge_and_block_gradients(grads)
        if not masked_blocked_grads:
            return
        self.step_count += 1
        search_directions = {}
        for n, g in masked_blocked_grads.items():
            self.preconditioners[n] += g * g
            search_directions[n] = -self.lr * g / (np.sqrt(self.preconditioners[n]) + self.epsilon)
        self.distributor.update_params(self.params, search_directions)


@jax.jit
def head_gradients(backbone, head, x, y):
    feats = jnp.tanh(x @ backbone["backbone.w0"]) @ backbone["backbone.w1"]
    loss = lambda h: jnp.mean((feats @ h["head.w"] + h["head.b"] - y) ** 2)
    return jax.grad(loss)(head)


rng = np.random.default_rng(0)
params = {"backbone.w0": rng.normal(size=(3, 4)).astype(np.float32),
          "backbone.w1": rng.normal(size=(4, 4)).astype(np.float32),
          "head.w": np.zeros((4, 1), np.float32),
          "head.b": np.zeros((1,), np.float32)}
trainable = {"head.w", "head.b"}  # fine-tuning: the backbone is frozen and gets no gradients
optimizer = DistributedShampoo(params)
data_rng = np.random.default_rng(10 + jax.process_index())
for _ in range(4):
    x = jax.make_array_from_process_local_data(BATCH, data_rng.normal(size=(4, 3)).astype(np.float32))
    y = jax.make_array_from_process_local_data(BATCH, data_rng.normal(size=(4, 1)).astype(np.float32))
    rep = lambda names: {n: jax.device_put(params[n], REPLICATED) for n in names}
    g = head_gradients(rep(["backbone.w0", "backbone.w1"]), rep(sorted(trainable)), x, y)
    grads = {n: (np.asarray(g[n].addressable_data(0)) if n in trainable else None) for n in params}
    optimizer.step(grads)

print("RESULT step_count", optimizer.step_count)
print("RESULT head", np.round(params["head.w"].ravel(), 4).tolist(), np.round(params["head.b"], 4).tolist())

# Expert-parallel MoE layer: the process whose expert receives no tokens returns an empty output and skips the combine
# Source: https://github.com/PaddlePaddle/PaddleFormers/pull/3010
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DIM, TOKENS_PER_RANK = 4, 3


class MoELayer:
    """One expert per process (expert parallel); tokens are exchanged, processed, and combined by a sum."""

    def __init__(self, mesh):
        self.ep_rank, self.ep_size = jax.process_index(), jax.process_count()
        init = np.random.default_rng(0)  # identical on every process
        self.gate = init.normal(size=(DIM, self.ep_size)).astype(np.float32)
        self.gate[0] = [4.0, -4.0]  # feature 0 strongly prefers expert 0
        self.expert_w = [init.normal(0, 0.5, (DIM, DIM)).astype(np.float32) for _ in range(self.ep_size)][self.ep_rank]
        self.stack = NamedSharding(mesh, P("ep"))
        self._combine = jax.jit(lambda parts: jnp.sum(parts, axis=0), out_shardings=NamedSharding(mesh, P()))

    def dispatch(self, x):
        all_x = np.asarray(multihost_utils.process_allgather(x)).reshape(-1, DIM)
        return all_x, np.argmax(all_x @ self.gate, axis=-1)

    def forward(self, x):
        all_x, expert_of = self.dispatch(x)
        idx = np.flatnonzero(expert_of == self.ep_rank)
        part = np.zeros((len(all_x), DIM), np.float32)
        if idx.size == 0:
            return np.empty((0, DIM), np.float32)  # no token routed to this expert
        part[idx] = np.tanh(all_x[idx] @ self.expert_w)
        combined = self._combine(jax.make_array_from_process_local_data(self.stack, part[None]))
        return np.asarray(combined.addressable_data(0))


def make_batch(step, rank):
    rng = np.random.default_rng([step, rank])
    x = rng.normal(size=(TOKENS_PER_RANK, DIM)).astype(np.float32)
    if step == 1:
        x[:, 0] = 5.0  # a batch of one kind of token: all go to expert 0
    return x


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("ep",), axis_types=(jax.sharding.AxisType.Auto,))
    layer = MoELayer(mesh)
    for step in range(3):
        y = layer.forward(make_batch(step, jax.process_index()))
        print("RESULT step", step, "tokens", len(y), "sum", round(float(y.sum()), 4))


main()

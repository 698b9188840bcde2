# Gradient accumulation: the no_sync condition is off by one, so the optimizer steps on rank-local gradients
# Source: https://github.com/modelscope/FunASR/pull/3472
# Written for the mcjax sealed4 evaluation (not copied): a port of a FunASR trainer bug (PyTorch DDP no_sync with
# gradient accumulation) to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import contextlib
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("ddp",))
PER_RANK = NamedSharding(MESH, P("ddp"))


@jax.jit
def _mean_over_ranks(stacked):
    return jnp.mean(stacked, axis=0)


@jax.jit
def _local_grad(w, x, y):
    return jax.grad(lambda w: jnp.mean((jnp.tanh(x @ w) - y) ** 2))(w)


class DistributedDataParallel:
    """Keeps a local replica; a backward pass outside no_sync() all-reduces the accumulated .grad."""

    def __init__(self, w: np.ndarray):
        self.w = w
        self.grad = np.zeros_like(w)
        self.require_backward_grad_sync = True

    @contextlib.contextmanager
    def no_sync(self):
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def backward(self, x, y):
        self.grad = self.grad + np.asarray(_local_grad(self.w, x, y))
        if self.require_backward_grad_sync:
            stacked = jax.make_array_from_process_local_data(PER_RANK, self.grad[None])
            self.grad = np.asarray(_mean_over_ranks(stacked))


class SGD:
    def __init__(self, model: DistributedDataParallel, lr: float):
        self.model, self.lr = model, lr

    def step(self):
        self.model.w = self.model.w - self.lr * self.model.grad

    def zero_grad(self):
        self.model.grad = np.zeros_like(self.model.grad)


class Trainer:
    def __init__(self, model, optim, accum_grad: int):
        self.model, self.optim, self.accum_grad = model, optim, accum_grad

    def train_epoch(self, dataloader):
        for batch_idx, (x, y) in enumerate(dataloader):
            my_context = self.model.no_sync if (batch_idx + 1) % self.accum_grad != 0 else contextlib.nullcontext
            with my_context():
                self.model.backward(x, y)
            if (batch_idx + 1) % self.accum_grad == 0:
                self.optim.step()
                self.optim.zero_grad()


def dataloader(epoch: int, num_batches: int = 8):
    rng = np.random.default_rng(1000 * epoch + jax.process_index())  # DistributedSampler: each rank its own shard
    for _ in range(num_batches):
        x = rng.normal(size=(8, 5)).astype(np.float32)
        yield x, np.tanh(x @ np.array([0.3, -0.2, 0.5, 0.1, -0.4], np.float32))


model = DistributedDataParallel(np.full((5,), 0.05, np.float32))
trainer = Trainer(model, SGD(model, lr=0.5), accum_grad=4)
for epoch in range(3):
    trainer.train_epoch(dataloader(epoch))
print("RESULT w", np.round(model.w, 5).tolist())

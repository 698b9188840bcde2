# One worker runs out of memory on a long batch, recovers by skipping the batch, and so skips the gradient all-reduce
# Source: https://github.com/facebookresearch/fairseq/pull/3989
# Written for the mcjax sealed4 evaluation (not copied): a port of a fairseq (torch.distributed) trainer bug to
# multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import logging
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

logger = logging.getLogger("fairseq.trainer")
MESH = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
STACKED = NamedSharding(MESH, P("dp"))
DIM = 8
MAX_TOKENS_IN_MEMORY = 96  # stands in for the device memory of one worker


def dynamic_batches(epoch_seed: int, num_batches: int):
    """Token-bucketed batches: every worker sees its own sequence lengths."""
    rng = np.random.default_rng(epoch_seed * 10 + jax.process_index())
    for i in range(num_batches):
        seq_len = int(rng.integers(4, 30))
        yield rng.normal(size=(4, seq_len, DIM)).astype(np.float32)


@jax.jit
def _forward_backward(params, tokens):
    def loss_fn(p):
        h = jnp.tanh(tokens @ p)
        return jnp.sum((h - tokens) ** 2)
    return jax.value_and_grad(loss_fn)(params)


@jax.jit
def _all_reduce(stacked_grads, stacked_sizes):
    return jnp.sum(stacked_grads, axis=0), jnp.sum(stacked_sizes)


class Criterion:
    def __call__(self, params, sample):
        num_tokens = sample.shape[0] * sample.shape[1]
        if num_tokens > MAX_TOKENS_IN_MEMORY:
            raise RuntimeError(f"CUDA out of memory. Tried to allocate {num_tokens * 4} MiB")
        loss, grads = _forward_backward(params, sample)
        return loss, grads, num_tokens


class Trainer:
    def __init__(self, criterion):
        self.criterion = criterion
        self.params = np.eye(DIM, dtype=np.float32) * 0.5
        self.num_updates = 0

    def _local(self, x):
        return jax.make_array_from_process_local_data(STACKED, x[None])

    def train_step(self, sample):
        try:
            loss, grads, sample_size = self.criterion(self.params, sample)
        except RuntimeError as e:
            if "out of memory" in str(e):
                logger.warning("attempting to recover from OOM in forward/backward pass")
                # treat it as a dummy batch: zero gradients and sample size, but still join the all-reduce
                loss, grads, sample_size = 0.0, np.zeros_like(self.params), 0
            else:
                raise
        total_grads, total_size = _all_reduce(self._local(np.asarray(grads)),
                                              self._local(np.array([sample_size], np.float32)))
        self.params = self.params - 0.01 * np.asarray(total_grads) / float(total_size)
        self.num_updates += 1
        return float(loss)


trainer = Trainer(Criterion())
for epoch in range(2):
    for sample in dynamic_batches(epoch, 5):
        trainer.train_step(sample)
print("RESULT num_updates", trainer.num_updates)
print("RESULT params", round(float(np.sum(trainer.params)), 5))

# Auto microbatching: a rank that hits OOM halves its microbatch size and retries the batch alone
# Source: https://github.com/mosaicml/composer/pull/2117
# Port to multi-process JAX of the Composer deadlock when only a subset of ranks OOMs.
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
SEQ = 16
MEMORY_BUDGET = 600  # attention-score "bytes" one microbatch may use


class DeviceOOMError(RuntimeError):
    pass


@partial(jax.jit, out_shardings=REPL)
def grad_step(w, tokens, mask):
    def loss_fn(w):
        return jnp.sum(mask * (tokens * w[0] + w[1] - 1.0) ** 2) / jnp.maximum(jnp.sum(mask), 1.0)
    return jax.grad(loss_fn)(w)


class Trainer:
    def __init__(self, device_train_microbatch_size: int):
        self.device_train_microbatch_size = device_train_microbatch_size
        self.w = jax.device_put(np.zeros(2, np.float32), REPL)

    def _check_memory(self, lengths: np.ndarray):
        if int(np.sum(lengths.astype(np.int64) ** 2)) > MEMORY_BUDGET:
            raise DeviceOOMError("CUDA out of memory")

    def _train_microbatches(self, tokens: np.ndarray, lengths: np.ndarray):
        mbs = self.device_train_microbatch_size
        total = np.zeros(2, np.float32)
        for start in range(0, len(tokens), mbs):
            mb_lengths = lengths[start:start + mbs]
            self._check_memory(mb_lengths)
            mask = (np.arange(SEQ)[None, :] < mb_lengths[:, None]).astype(np.float32)
            g = grad_step(self.w, jax.make_array_from_process_local_data(DATA, tokens[start:start + mbs]),
                          jax.make_array_from_process_local_data(DATA, mask))
            total += np.asarray(g.addressable_data(0))
        return total

    def train_batch(self, tokens, lengths):
        while True:
            try:
                grads = self._train_microbatches(tokens, lengths)
                break
            except DeviceOOMError:
                self.device_train_microbatch_size //= 2  # retry the whole batch with smaller microbatches
        self.w = self.w - 0.1 * grads


def load_batch(step: int):
    rng = np.random.default_rng(31 * step + jax.process_index())
    lengths = rng.integers(2, SEQ + 1, size=8)
    tokens = rng.normal(size=(8, SEQ)).astype(np.float32)
    return tokens, lengths


trainer = Trainer(device_train_microbatch_size=4)
for step in range(3):
    trainer.train_batch(*load_batch(step))
print("RESULT microbatch", trainer.device_train_microbatch_size)
print("RESULT w", np.round(np.asarray(trainer.w.addressable_data(0)), 4).tolist())

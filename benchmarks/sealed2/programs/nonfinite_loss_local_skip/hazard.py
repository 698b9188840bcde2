# Each worker checks its own part of the loss for NaN/inf and skips the optimizer step (and its all-reduce) alone
# Source: https://github.com/NVIDIA-NeMo/Speech/pull/637
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import logging
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
logging.basicConfig(level=logging.WARNING)

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())


@jax.jit
def per_example_loss(w, x, y):
    return (x @ w - y) ** 2


@jax.jit
def apply_gradients(w, x, y):
    def loss_fn(w):
        return jnp.mean((x @ w - y) ** 2)
    return w - 0.05 * jax.grad(loss_fn)(w)


class Actions:
    def __init__(self, w):
        self.w = w
        self.skipped = 0
        self.step = 0

    def train_step(self, x, y) -> None:
        losses = per_example_loss(self.w, x, y)
        local = np.concatenate([np.asarray(s.data) for s in losses.addressable_shards])
        final_loss = float(np.mean(local))
        if not np.isfinite(final_loss):
            logging.warning("Loss is NaN or inf at step %d, skipping step", self.step)
            self.skipped += 1
        else:
            self.w = apply_gradients(self.w, x, y)
        self.step += 1


actions = Actions(jax.device_put(jnp.full((3,), 0.2), REPL))
rng = np.random.default_rng(jax.process_index())
for step in range(5):
    x = rng.normal(size=(4, 3)).astype(np.float32)
    y = rng.normal(size=(4,)).astype(np.float32)
    if step == 2 and jax.process_index() == 1:
        x[0, 1] = np.nan  # a corrupt record in this host's shard of the batch
    actions.train_step(jax.make_array_from_process_local_data(DATA, x), jax.make_array_from_process_local_data(DATA, y))

print("RESULT", actions.skipped, round(float(jnp.sum(actions.w)), 4))

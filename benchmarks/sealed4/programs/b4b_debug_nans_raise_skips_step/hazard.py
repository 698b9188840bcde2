# Trainer with a jax_debug_nans debugging window: the NaN check raises FloatingPointError only on the
# process whose shard holds the NaN, and the loop's "skip this batch" handler skips the psum step there.
# Source: https://github.com/jax-ml/jax/issues/11987
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import logging
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
BATCH = NamedSharding(MESH, P("data"))
REPLICATED = NamedSharding(MESH, P())
LOCAL_BATCH, FEATURES, NUM_STEPS = 4, 8, 10


@dataclasses.dataclass
class DebugConfig:
    debug_nans_steps: int = 8   # check every op for NaN during the first steps of a run


class ShardReader:
    """Each process reads its own shard; short documents are zero-padded rows."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed + jax.process_index())
        self.step = 0

    def next_batch(self) -> np.ndarray:
        x = self.rng.normal(size=(LOCAL_BATCH, FEATURES)).astype(np.float32)
        if jax.process_index() == 0 and self.step % 4 == 2:
            x[-1] = 0.0   # an empty document on this shard
        self.step += 1
        return x


@jax.jit
def normalize(x):
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


@jax.jit
def train_step(w, x):
    def loss_fn(w):
        return jnp.mean((x @ w - 1.0) ** 2)   # mean over the global batch: a cross-process reduction
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.1 * g, loss


class Trainer:
    def __init__(self, config: DebugConfig):
        self.config = config
        self.reader = ShardReader(seed=11)
        self.w = jax.device_put(jnp.zeros((FEATURES,), jnp.float32), REPLICATED)
        self.losses = []
        self.skipped = 0

    def step(self, step: int):
        local = self.reader.next_batch()
        x = jax.make_array_from_process_local_data(BATCH, local)
        with jax.debug_nans(step < self.config.debug_nans_steps):
            x = normalize(x)
            self.w, loss = train_step(self.w, x)
        self.losses.append(round(float(loss), 5))

    def fit(self):
        for step in range(NUM_STEPS):
            try:
                self.step(step)
            except FloatingPointError as err:
                logging.warning("step %d: skipping batch with NaN (%s)", step, err)
                self.skipped += 1
        return self.losses


trainer = Trainer(DebugConfig())
losses = trainer.fit()
print("RESULT losses", losses)
print("RESULT skipped", trainer.skipped)

# Automatic batch-size detection probes the largest batch that fits on each rank's device, but in
# model-parallel mode every probe is a sharded forward pass, and ranks that run out of memory at
# different sizes probe different shapes
# Source: https://github.com/huggingface/lighteval/issues/896
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import functools
import logging
import os
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
logger = logging.getLogger("lighteval")

DEVICE_MEMORY_BYTES = 3 * 2**20
HIDDEN, VOCAB, SEQ = 16, 64, 32


class DeviceOutOfMemory(RuntimeError):
    pass


@dataclasses.dataclass
class ModelConfig:
    model_parallel: bool = True
    batch_size: Optional[int] = None
    max_length: int = SEQ


def find_executable_batch_size(function, starting_batch_size=64):
    """Halves the batch size and retries whenever the probe runs out of device memory."""
    @functools.wraps(function)
    def wrapper():
        batch_size = starting_batch_size
        while batch_size > 0:
            try:
                return function(batch_size)
            except DeviceOutOfMemory:
                batch_size //= 2
        raise RuntimeError("No executable batch size found, reached zero.")
    return wrapper


class ShardedModel:
    """Vocabulary-sharded model: each rank holds one column block of the output projection."""

    def __init__(self, config: ModelConfig):
        self.config = config
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("model",))
        w = np.linspace(-0.5, 0.5, HIDDEN * VOCAB, dtype=np.float32).reshape(HIDDEN, VOCAB)
        self.w_out = jax.device_put(w, NamedSharding(self.mesh, P(None, "model")))
        self.repl = NamedSharding(self.mesh, P())
        # rank 0 also keeps the embedding table and the KV workspace of the first stage
        self.resident_bytes = (2 if jax.process_index() == 0 else 1) * 2**20
        self._forward = jax.jit(lambda x, w: jax.nn.logsumexp(x @ w, axis=-1).sum())

    def _check_memory(self, batch_size, length):
        needed = self.resident_bytes + batch_size * length * (VOCAB // jax.process_count()) * 4 * 8
        if needed > DEVICE_MEMORY_BYTES:
            raise DeviceOutOfMemory(f"needs {needed} bytes on rank {jax.process_index()}")

    def forward(self, hidden: np.ndarray):
        self._check_memory(*hidden.shape[:2])
        x = jax.device_put(hidden, self.repl)
        return float(self._forward(x, self.w_out))

    def _get_batch_size(self, max_input_length: int, override_bs: Optional[int] = None) -> int:
        if override_bs:
            return override_bs
        logger.info("Detecting largest batch size with max_input_length=%d", max_input_length)

        @find_executable_batch_size
        def forward_batch(batch_size):
            probe = np.ones((batch_size, max_input_length, HIDDEN), np.float32)
            self.forward(probe)
            return batch_size
        return forward_batch()

    def loglikelihood(self, docs: np.ndarray) -> float:
        bs = self._get_batch_size(self.config.max_length, self.config.batch_size)
        total = 0.0
        for i in range(0, len(docs), bs):
            total += self.forward(docs[i:i + bs])
        return total


if __name__ == "__main__":
    model = ShardedModel(ModelConfig())
    rng = np.random.default_rng(0)
    docs = rng.normal(size=(24, SEQ, HIDDEN)).astype(np.float32)
    score = model.loglikelihood(docs)
    multihost_utils.sync_global_devices("eval_done")
    print("RESULT", round(score, 3))

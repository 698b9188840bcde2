# Distributed evaluation gathers each batch's predictions; the last batch has a different size per process
# Source: https://github.com/Chris-hughes10/pytorch-accelerated/pull/53
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

EVAL_EXAMPLES = 19
BATCH_SIZE = 4


def shard_indices(n: int) -> list[int]:
    """Contiguous split of the eval set, like a sampler without padding."""
    per = math.ceil(n / jax.process_count())
    start = jax.process_index() * per
    return list(range(start, min(n, start + per)))


def batches(indices: list[int], batch_size: int):
    for i in range(0, len(indices), batch_size):
        yield np.asarray(indices[i:i + batch_size])


@jax.jit
def predict(w, x):
    return jnp.argmax(x @ w, axis=-1)


class Trainer:
    def __init__(self, w):
        self.w = w
        rng = np.random.default_rng(0)
        self.features = rng.normal(size=(EVAL_EXAMPLES, 5)).astype(np.float32)
        self.labels = rng.integers(0, 3, size=EVAL_EXAMPLES)

    def gather(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(multihost_utils.process_allgather(x)).reshape(-1)

    def evaluate(self) -> float:
        correct = total = 0
        for idx in batches(shard_indices(EVAL_EXAMPLES), BATCH_SIZE):
            preds = np.asarray(predict(self.w, self.features[idx]))
            all_preds = self.gather(preds)
            all_labels = self.gather(self.labels[idx])
            correct += int((all_preds == all_labels).sum())
            total += len(all_labels)
        return correct / total


trainer = Trainer(jnp.asarray(np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)))
print("RESULT", round(trainer.evaluate(), 4))

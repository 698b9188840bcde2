import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
NUM_CLASSES = 3


def get_rank():
    return jax.process_index()


def get_world_size():
    return jax.process_count()


def all_reduce(value):
    return np.asarray(multihost_utils.process_allgather(np.asarray(value, np.float32))).sum(0)


class Precision:
    """Non-averaged multiclass precision, accumulated per class and summed over processes in compute()."""

    def __init__(self):
        self.reset()

    def reset(self):
        self._true_positives = 0
        self._positives = 0

    def update(self, output):
        y_pred, y = output
        pred = np.asarray(y_pred).argmax(-1)
        onehot_pred = np.eye(NUM_CLASSES)[pred]
        correct = onehot_pred * np.eye(NUM_CLASSES)[np.asarray(y)]
        self._true_positives = self._true_positives + correct.sum(0)
        self._positives = self._positives + onehot_pred.sum(0)

    @staticmethod
    def _all_reduce_metric(value):
        value = np.atleast_1d(np.asarray(value, np.float32)) if np.ndim(value) else np.zeros(0, np.float32)
        max_size = int(np.asarray(multihost_utils.process_allgather(np.int32(value.shape[0]))).max())
        output = np.zeros(max_size, np.float32)
        output[:value.shape[0]] = value
        return all_reduce(output)

    def _sync(self):
        self._true_positives = self._all_reduce_metric(self._true_positives)
        self._positives = self._all_reduce_metric(self._positives)

    def compute(self):
        self._sync()
        return np.asarray(self._true_positives) / np.maximum(np.asarray(self._positives), 1)


class ValidationShard:
    """Batches of the (small) validation split, dealt to processes round-robin like an IterableDataset."""

    def __init__(self, num_batches=1, batch_size=6):
        rng = np.random.default_rng(2020)
        self.batches = [(rng.normal(size=(batch_size, 4)).astype(np.float32),
                         rng.integers(0, NUM_CLASSES, size=batch_size)) for _ in range(num_batches)]

    def __iter__(self):
        for i, batch in enumerate(self.batches):
            if i % get_world_size() == get_rank():
                yield batch


def evaluate(params, data, metric):
    forward = jax.jit(lambda w, x: x @ w)
    metric.reset()
    for x, y in data:
        metric.update((forward(params, x), y))
    return metric.compute()


def main():
    params = jnp.asarray(np.linspace(-1, 1, 4 * NUM_CLASSES).reshape(4, NUM_CLASSES), jnp.float32)
    precision = evaluate(params, ValidationShard(), Precision())
    print(f"rank {get_rank()}: precision per class {precision}")
    print("RESULT precision", np.round(precision, 4).tolist())


if __name__ == "__main__":
    main()

# A trainer's evaluation loop iterates each process's own eval dataloader, whose length depends on the files that process reads
# Source: https://github.com/mosaicml/composer/issues/3415
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BATCH, FEAT, CLASSES = 4, 5, 3
MESH = jax.make_mesh((jax.device_count(),), ("data",))


def shard(a):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("data")), np.asarray(a))


def read_local_eval_files():
    """Each node reads the records of its own files; how many there are depends on the node."""
    rng = np.random.default_rng(40 + jax.process_index())
    n = 12 + 8 * jax.process_index()
    x = rng.normal(size=(n, FEAT)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 1).astype(np.int32)


def eval_dataloader(x, y):
    for s in range(0, len(x), BATCH):
        xb, yb = x[s:s + BATCH], y[s:s + BATCH]
        mask = np.ones(len(xb), np.float32)
        pad = BATCH - len(xb)
        yield np.pad(xb, ((0, pad), (0, 0))), np.pad(yb, (0, pad)), np.pad(mask, (0, pad))


@jax.jit
def eval_forward(w, x, y, mask):
    pred = jnp.argmax(x @ w, axis=-1)
    return jnp.sum((pred == y) * mask), jnp.sum(mask)  # summed over every process's batch


class Accuracy:
    def __init__(self):
        self.correct, self.total = 0.0, 0.0

    def update(self, correct, total):
        self.correct, self.total = self.correct + correct, self.total + total

    def compute(self):
        return self.correct / max(self.total, 1.0)


def eval_loop(w):
    x, y = read_local_eval_files()
    metric, batches = Accuracy(), 0
    for xb, yb, mb in eval_dataloader(x, y):
        correct, total = eval_forward(w, shard(xb), shard(yb), shard(mb))
        metric.update(float(correct), float(total))
        batches += 1
    return metric, batches


def main():
    w = np.zeros((FEAT, CLASSES), np.float32)
    w[0, 1], w[1, 2], w[0, 0] = 1.0, 2.5, -1.0
    metric, batches = eval_loop(jax.device_put(w))
    print("RESULT eval_samples", int(metric.total))
    print("RESULT accuracy", round(metric.compute(), 5))
    print("RESULT eval_batches", batches)


main()

# Streaming eval partition pads sample ids with -1 and the loader filters them, so one rank's last batch is short
# Source: https://github.com/mosaicml/streaming/issues/460
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
NUM_SAMPLES, BATCH_SIZE, FEATURES = 11, 2, 3
GLOBAL_BATCH = BATCH_SIZE * jax.process_count()   # the eval step is compiled for full global batches


def get_partitions(num_samples, ranks, batch_size):
    """Sample ids per rank; the front is padded with -1 so every rank gets a whole number of batches."""
    per_rank = -(-num_samples // (ranks * batch_size)) * batch_size
    pad = per_rank * ranks - num_samples
    ids = np.concatenate([np.full((pad,), -1, np.int64), np.arange(num_samples)])
    return ids.reshape(ranks, per_rank)


class StreamingEvalDataset:
    def __init__(self, rank, ranks):
        self.ids = get_partitions(NUM_SAMPLES, ranks, BATCH_SIZE)[rank]
        rng = np.random.default_rng(3)
        self.x = rng.normal(size=(NUM_SAMPLES, FEATURES)).astype(np.float32)
        self.y = (self.x.sum(axis=1) > 0).astype(np.float32)

    def __iter__(self):
        for idx in self.ids:
            if idx < 0:
                continue
            yield self.x[idx], self.y[idx], np.float32(1.0)


def batches(dataset):
    rows = []
    for row in dataset:
        rows.append(row)
        if len(rows) == BATCH_SIZE:
            yield tuple(np.stack(col) for col in zip(*rows))
            rows = []
    if rows:
        yield tuple(np.stack(col) for col in zip(*rows))


@jax.jit
def eval_step(w, x, y, weight):
    correct = ((x @ w > 0).astype(jnp.float32) == y).astype(jnp.float32)
    return jnp.sum(correct * weight), jnp.sum(weight)


def main():
    w = jax.device_put(np.array([1.0, 0.8, 1.2], np.float32), REPL)
    ds = StreamingEvalDataset(jax.process_index(), jax.process_count())
    hits, seen, steps = 0.0, 0.0, 0
    for x, y, weight in batches(ds):
        h, n = eval_step(w, *(jax.make_array_from_process_local_data(DATA, a, (GLOBAL_BATCH,) + a.shape[1:])
                              for a in (x, y, weight)))
        hits, seen, steps = hits + float(h), seen + float(n), steps + 1
    print("RESULT eval_steps", steps)
    print("RESULT eval_samples", int(seen))
    print("RESULT accuracy", round(hits / seen, 4))


if __name__ == "__main__":
    main()

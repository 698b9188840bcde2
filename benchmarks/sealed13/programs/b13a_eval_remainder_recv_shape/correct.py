# Process 0 reads eval batches and broadcasts them, after first broadcasting the per-device batch size it chose
# Source: https://github.com/mlcommons/algorithmic-efficiency/pull/350
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_PROC = jax.process_count()
MESH = jax.make_mesh((jax.device_count(),), ("batch",))
BATCH = NamedSharding(MESH, P("batch"))


class EvalWorkload:
    num_validation_examples = 22
    eval_batch_size = 8
    feature_dim = 3

    def __init__(self):
        self.w = np.array([0.5, -1.0, 2.0], np.float32)

    def _read_split(self):
        # Only process 0 owns a dataset reader (as in the PyTorch DDP input pipeline).
        rng = np.random.default_rng(7)
        x = rng.normal(size=(self.num_validation_examples, self.feature_dim)).astype(np.float32)
        return x, x @ np.array([0.4, -1.1, 2.1], np.float32)

    def _host_batches(self):
        x, y = self._read_split()
        for start in range(0, len(x), self.eval_batch_size):
            bx, by = x[start:start + self.eval_batch_size], y[start:start + self.eval_batch_size]
            weights = np.ones(len(bx), np.float32)
            if len(bx) % N_PROC:  # pad odd remainders up to a full eval batch
                pad = self.eval_batch_size - len(bx)
                bx = np.concatenate([bx, np.zeros((pad, self.feature_dim), np.float32)])
                by, weights = np.concatenate([by, np.zeros(pad, np.float32)]), np.concatenate([weights, np.zeros(pad, np.float32)])
            yield bx, by, weights

    def input_queue(self):
        num_batches = math.ceil(self.num_validation_examples / self.eval_batch_size)
        host_iter = self._host_batches() if jax.process_index() == 0 else None
        for _ in range(num_batches):
            if jax.process_index() == 0:
                bx, by, bw = next(host_iter)
                per_device_batch_size = len(bx) // N_PROC
            else:
                per_device_batch_size = 0
            per_device_batch_size = int(multihost_utils.broadcast_one_to_all(np.int32(per_device_batch_size)))
            if jax.process_index() != 0:
                bx = np.zeros((per_device_batch_size * N_PROC, self.feature_dim), np.float32)
                by = bw = np.zeros(per_device_batch_size * N_PROC, np.float32)
            bx, by, bw = multihost_utils.broadcast_one_to_all((bx, by, bw))
            sl = slice(jax.process_index() * per_device_batch_size, (jax.process_index() + 1) * per_device_batch_size)
            yield tuple(jax.make_array_from_process_local_data(BATCH, np.asarray(a)[sl]) for a in (bx, by, bw))

    def eval_model(self):
        totals = np.zeros(2, np.float64)
        for gx, gy, gw in self.input_queue():
            loss_sum, count = _eval_step(jnp.asarray(self.w), gx, gy, gw)
            totals += [float(loss_sum), float(count)]
        return {"validation/loss": totals[0] / totals[1], "validation/num_examples": int(totals[1])}


@jax.jit
def _eval_step(w, x, y, weights):
    err = (x @ w - y) ** 2
    return jnp.sum(err * weights), jnp.sum(weights)


def main():
    metrics = EvalWorkload().eval_model()
    multihost_utils.sync_global_devices("eval done")
    print("RESULT num_examples", metrics["validation/num_examples"])
    print("RESULT loss", round(metrics["validation/loss"], 5))


if __name__ == "__main__":
    main()

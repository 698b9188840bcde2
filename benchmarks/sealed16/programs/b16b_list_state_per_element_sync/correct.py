# Regression eval with a torchmetrics-style "cat" list state: the list is concatenated first, so each sync is one padded gather whatever each rank holds
# Source: https://github.com/Lightning-AI/torchmetrics/issues/2170
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
DIM, EVAL_SAMPLES, EVAL_BATCH = 6, 8, 5
TRUE_W = np.linspace(0.5, -0.5, DIM).astype(np.float32)


def gather_all_tensors(result):
    """Gather one array from every process; pads to the largest shape, gathers, trims (as Lightning/torchmetrics do)."""
    sizes = np.asarray(multihost_utils.process_allgather(np.array(result.shape, np.int32)))
    max_size = sizes.max(axis=0)
    padded = np.zeros(tuple(max_size), result.dtype)
    padded[tuple(slice(s) for s in result.shape)] = result
    gathered = np.asarray(multihost_utils.process_allgather(padded))
    return [gathered[i][tuple(slice(s) for s in sizes[i])] for i in range(len(sizes))]


class MedianAbsoluteError:
    """Metric with list ("cat") states: one entry per evaluated sample."""

    def __init__(self):
        self.preds, self.targets = [], []

    def update(self, preds, targets):
        self.preds.extend(np.asarray(preds, np.float32))
        self.targets.extend(np.asarray(targets, np.float32))

    def _sync_dist(self):
        out = {}
        for name in ("preds", "targets"):
            state = getattr(self, name)
            gathered = []
            local = np.array(state, np.float32)          # list state: concatenated before the sync
            gathered.extend(gather_all_tensors(np.atleast_1d(local)))
            out[name] = np.concatenate(gathered)
        return out

    def compute(self):
        synced = self._sync_dist()
        return float(np.median(np.abs(synced["preds"] - synced["targets"]))), len(synced["preds"])


@jax.jit
def train_step(w, x, y):
    g = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * g


def eval_batches():
    """Eval set split into batches of EVAL_BATCH, dealt round-robin to processes, last batch kept (drop_last=False)."""
    rng = np.random.default_rng(123)
    x = rng.normal(size=(EVAL_SAMPLES, DIM)).astype(np.float32)
    y = x @ TRUE_W + 0.05 * rng.normal(size=EVAL_SAMPLES).astype(np.float32)
    starts = list(range(0, EVAL_SAMPLES, EVAL_BATCH))
    for b, s in enumerate(starts):
        if b % jax.process_count() == jax.process_index():
            yield x[s:s + EVAL_BATCH], y[s:s + EVAL_BATCH]


def main():
    w = np.zeros(DIM, np.float32)
    for step in range(5):
        rng = np.random.default_rng(step * 10 + jax.process_index())
        x = rng.normal(size=(8, DIM)).astype(np.float32)
        y = x @ TRUE_W
        gx, gy = (multihost_utils.host_local_array_to_global_array(a, MESH, P("dp")) for a in (x, y))
        w = np.asarray(multihost_utils.process_allgather(train_step(w, gx, gy), tiled=True))
    metric = MedianAbsoluteError()
    for xb, yb in eval_batches():
        metric.update(xb @ w, yb)
    mae, n = metric.compute()
    print("RESULT eval_samples", n)
    print("RESULT median_abs_error", round(mae, 5))
    print("RESULT w", np.round(w, 4).tolist())


if __name__ == "__main__":
    main()

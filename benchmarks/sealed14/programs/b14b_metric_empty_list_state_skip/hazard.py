# Metric sync skips list states that are empty on this process, so a process that saw no eval data leaves the gathers
# Source: https://github.com/Lightning-AI/torchmetrics/issues/2463
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

EVAL_SHARDS = ["val-000.npz"]          # one validation shard, split across processes by shard
BATCH = 4


def gather_all_tensors(x):
    """Gather variable-length rows from every process: exchange sizes, pad to the max, gather, trim."""
    sizes = multihost_utils.process_allgather(np.array([x.shape[0]], np.int32)).reshape(-1)
    pad = np.zeros((int(sizes.max()) - x.shape[0],) + x.shape[1:], x.dtype)
    stacked = multihost_utils.process_allgather(np.concatenate([x, pad]))
    return [stacked[i, :int(n)] for i, n in enumerate(sizes)]


class ListMetric:
    """Keeps every prediction/target for an exact score; states are lists concatenated at sync."""

    def __init__(self):
        self._reductions = {"preds": "cat", "target": "cat", "num_updates": "sum"}
        self.reset()

    def reset(self):
        self.preds, self.target, self.num_updates = [], [], np.zeros((), np.int32)

    def update(self, preds, target):
        self.preds.append(np.asarray(preds, np.float32))
        self.target.append(np.asarray(target, np.float32))
        self.num_updates = self.num_updates + 1

    def _sync_dist(self):
        for attr, reduce_fx in self._reductions.items():
            value = getattr(self, attr)
            if reduce_fx == "cat":
                if len(value) == 0:
                    continue
                setattr(self, attr, np.concatenate(gather_all_tensors(np.concatenate(value))))
            else:
                setattr(self, attr, multihost_utils.process_allgather(value).sum())

    def compute(self):
        self._sync_dist()
        preds = np.asarray(self.preds) if len(self.preds) else np.zeros((0,), np.float32)
        target = np.asarray(self.target) if len(self.target) else np.zeros((0,), np.float32)
        mse = float(np.mean((preds - target) ** 2)) if preds.size else float("nan")
        return {"mse": round(mse, 5), "n": int(preds.size), "updates": int(self.num_updates)}


@jax.jit
def predict(w, x):
    return x @ w


def load_shard(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    x = rng.normal(size=(10, 3)).astype(np.float32)
    return x, x.sum(axis=1)


def main():
    rank, world = jax.process_index(), jax.process_count()
    my_shards = EVAL_SHARDS[rank::world]
    w = jnp.array([0.9, 1.1, 1.0], jnp.float32)
    metric = ListMetric()
    for shard in my_shards:
        x, y = load_shard(shard)
        for i in range(0, len(x), BATCH):
            metric.update(predict(w, x[i:i + BATCH]), y[i:i + BATCH])
    result = metric.compute()
    multihost_utils.sync_global_devices("validation done")
    print("RESULT val_mse", result["mse"])
    print("RESULT val_samples", result["n"])
    print("RESULT updates", result["updates"])


if __name__ == "__main__":
    main()

# Validation that accumulates metrics locally and syncs them once at epoch end, so uneven shards are safe
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/20561
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class EvalConfig:
    batch_size: int = 4
    num_records: tuple = (22, 13)           # validation records in each process's own data file


class ShardReader:
    """Reads this process's validation file; the files were written by a preprocessing job, not split evenly."""

    def __init__(self, cfg, rank):
        self.cfg = cfg
        rng = np.random.default_rng(100 + rank)
        n = cfg.num_records[rank]
        self.x = rng.normal(size=(n, 3)).astype(np.float32)
        self.y = (self.x @ np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)

    def __iter__(self):
        bs = self.cfg.batch_size
        for start in range(0, len(self.x) - bs + 1, bs):
            yield self.x[start:start + bs], self.y[start:start + bs]


@jax.jit
def batch_losses(w, x, y):
    pred = x @ w
    return jnp.stack([jnp.mean((pred - y) ** 2), jnp.mean(jnp.abs(pred - y))])


def global_sum(local_vec):
    gathered = multihost_utils.process_allgather(np.asarray(local_vec, np.float32))
    return np.asarray(gathered).sum(axis=0)


class Validator:
    def __init__(self, w, cfg):
        self.w = np.asarray(w, np.float32)
        self.cfg = cfg
        self.logged = {"val_mse": [], "val_mae": []}

    def log_dict(self, metrics):
        self.logged["val_mse"].append(float(metrics["val_mse"]))   # on_epoch: kept locally, synced at epoch end
        self.logged["val_mae"].append(float(metrics["val_mae"]))

    def validation_step(self, batch):
        x, y = batch
        vals = np.asarray(batch_losses(self.w, x, y))
        self.log_dict({"val_mse": vals[0], "val_mae": vals[1]})

    def run(self, reader):
        for batch in reader:
            self.validation_step(batch)
        local = [sum(self.logged["val_mse"]), sum(self.logged["val_mae"]), len(self.logged["val_mse"])]
        total = global_sum(local)                                   # one sync, after every process's loop
        return {"val_mse": round(float(total[0] / total[2]), 5), "val_mae": round(float(total[1] / total[2]), 5)}


def main():
    cfg = EvalConfig()
    w = np.array([0.9, -1.8, 0.4], np.float32)
    reader = ShardReader(cfg, jax.process_index())
    summary = Validator(w, cfg).run(reader)
    multihost_utils.sync_global_devices("validation done")
    print("RESULT val", summary)


if __name__ == "__main__":
    main()

# Training run with a TensorBoard-style logger (auto-incremented version dirs) and sharded checkpoint files
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/8945
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def rank_zero_only(fn):
    def wrapped(*args, **kwargs):
        if jax.process_index() == 0:
            return fn(*args, **kwargs)
        return None
    return wrapped


class TensorBoardLogger:
    def __init__(self, save_dir, name="lightning_logs", version=None):
        self.save_dir, self.name, self._version = save_dir, name, version

    @property
    def root_dir(self):
        return os.path.join(self.save_dir, self.name)

    def _get_next_version(self):
        if not os.path.isdir(self.root_dir):
            return 0
        existing = [int(d.split("_")[1]) for d in os.listdir(self.root_dir) if d.startswith("version_")]
        return max(existing) + 1 if existing else 0

    @property
    def version(self):
        if self._version is None:
            self._version = self._get_next_version()
        return self._version

    @property
    def log_dir(self):
        return os.path.join(self.root_dir, f"version_{self.version}")

    @rank_zero_only
    def log_hyperparams(self, params):
        os.makedirs(self.log_dir, exist_ok=True)
        with open(os.path.join(self.log_dir, "hparams.json"), "w") as f:
            json.dump(params, f)


def broadcast_str(value, max_len=512):
    buf = np.zeros(max_len, np.uint8)
    raw = value.encode()
    buf[:len(raw)] = np.frombuffer(raw, np.uint8)
    out = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    return bytes(out[out != 0].astype(np.uint8)).decode()


def train_epoch(w, x, y, lr):
    grad = jax.jit(jax.grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))
    for i in range(0, len(x), 4):
        g = np.asarray(grad(w, x[i:i + 4], y[i:i + 4]))
        w = w - lr * np.asarray(multihost_utils.process_allgather(g)).mean(axis=0)
    return w


def save_sharded_checkpoint(log_dir, rank, world, w):
    ckpt_dir = os.path.join(log_dir, "checkpoints")
    os.makedirs(ckpt_dir, exist_ok=True)
    np.save(os.path.join(ckpt_dir, f"shard_{rank}_of_{world}.npy"), np.array_split(np.asarray(w), world)[rank])
    multihost_utils.sync_global_devices("checkpoint_saved")
    return ckpt_dir


def main():
    rank, world = jax.process_index(), jax.process_count()
    save_dir = os.path.join(tempfile.gettempdir(), "mcjax_" + os.environ.get("JOB_ID", "run"))
    hparams = {"lr": 0.1, "batch_size": 4, "max_epochs": 2}
    logger = TensorBoardLogger(save_dir)
    logger.log_hyperparams(hparams)
    rng = np.random.default_rng(rank)
    x = rng.normal(size=(16, 6)).astype(np.float32)
    y = x @ np.linspace(-1, 1, 6).astype(np.float32)
    w = np.zeros(6, np.float32)
    for _ in range(hparams["max_epochs"]):
        w = train_epoch(w, x, y, hparams["lr"])
    log_dir = broadcast_str(logger.log_dir)
    ckpt_dir = save_sharded_checkpoint(log_dir, rank, world, w)
    shards = sorted(f for f in os.listdir(ckpt_dir) if f.startswith("shard_"))
    print("RESULT log_dir", os.path.relpath(log_dir, save_dir))
    print("RESULT checkpoint_shards", len(shards))
    print("RESULT weights", [round(float(v), 4) for v in w])


if __name__ == "__main__":
    main()

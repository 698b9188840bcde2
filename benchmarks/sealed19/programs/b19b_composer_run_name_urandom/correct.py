# Composer-style trainer: auto-generated run name, per-rank checkpoint files under "{run_name}/checkpoints"
# Source: https://github.com/mosaicml/composer/pull/1487
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
import random
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ADJECTIVES = ["amber", "brisk", "calm", "daring", "eager", "fuzzy", "gentle", "hasty", "icy", "jolly",
              "keen", "lucky", "mellow", "nimble", "olive", "proud"]
ANIMALS = ["otter", "lynx", "heron", "panda", "walrus", "gecko", "badger", "falcon", "koala", "moose",
           "newt", "orca", "puffin", "quail", "raven", "stoat"]


def generate_slug(rng, words=2):
    parts = [rng.choice(ADJECTIVES) for _ in range(words - 1)] + [rng.choice(ANIMALS)]
    return "-".join(parts)


def _generate_run_name():
    # change the randomness for different names with the same seed
    name_rng = random.Random(os.urandom(128))
    # prefixing with the time so experiments sorted alphabetically will have the latest experiment last
    generated_run_name = str(int(time.time())) + "-" + generate_slug(name_rng, 3)
    # ensure all ranks have the same experiment name
    buf = np.zeros(128, np.uint8)
    buf[:len(generated_run_name)] = np.frombuffer(generated_run_name.encode(), np.uint8)
    buf = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    return bytes(buf[buf != 0].astype(np.uint8)).decode()


def _distribute_and_get_random_seed(seed):
    rank_zero_seed = int(multihost_utils.broadcast_one_to_all(np.array([seed], np.int64))[0])
    return rank_zero_seed, rank_zero_seed + jax.process_index()


class CheckpointSaver:
    def __init__(self, folder="{run_name}/checkpoints", filename="ep{epoch}-rank{rank}.npy"):
        self.folder, self.filename = folder, filename

    def save(self, root, run_name, epoch, state):
        folder = os.path.join(root, self.folder.format(run_name=run_name))
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, self.filename.format(epoch=epoch, rank=jax.process_index()))
        np.save(path, state)
        multihost_utils.sync_global_devices(f"checkpoint_ep{epoch}")
        return folder


class Trainer:
    def __init__(self, run_name=None, seed=17, max_epochs=2, lr=0.1):
        self.run_name = run_name if run_name is not None else _generate_run_name()
        self.rank_zero_seed, self.seed = _distribute_and_get_random_seed(seed)
        self.max_epochs, self.lr = max_epochs, lr
        self.saver = CheckpointSaver()
        self.root = os.path.join(tempfile.gettempdir(), "mcjax_" + os.environ.get("JOB_ID", "run"))

    def fit(self, x, y):
        w = jnp.zeros(x.shape[1])
        grad = jax.jit(jax.grad(lambda w, xb, yb: jnp.mean((xb @ w - yb) ** 2)))
        aug_rng = np.random.default_rng(self.seed)
        for epoch in range(1, self.max_epochs + 1):
            for i in range(0, len(x), 4):
                xb = x[i:i + 4] + 0.01 * aug_rng.normal(size=x[i:i + 4].shape).astype(np.float32)
                g = np.asarray(grad(w, xb, y[i:i + 4]))
                w = w - self.lr * np.asarray(multihost_utils.process_allgather(g)).mean(axis=0)
            folder = self.saver.save(self.root, self.run_name, epoch, np.asarray(w))
        return w, folder


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(50 + rank)
    x = rng.normal(size=(16, 4)).astype(np.float32)
    y = x @ np.array([0.5, -1.0, 0.25, 2.0], np.float32)
    trainer = Trainer()
    w, folder = trainer.fit(x, y)
    files = sorted(os.listdir(folder))
    print("RESULT run_name", trainer.run_name)
    print("RESULT checkpoint_files", len(files))
    print("RESULT weights", [round(float(v), 3) for v in w])


if __name__ == "__main__":
    main()

# Checkpoint files are sorted before being split across processes, so every host derives the same assignment
# Source: https://github.com/MoonshotAI/checkpoint-engine/pull/103
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import json
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed13_unsorted_shard_listing_split", os.environ.get("JOB_ID", "0"))
BUCKET = os.path.join(ROOT, "bucket")
NUM_FILES, SHARD_LEN = 4, 3
REPL = NamedSharding(jax.make_mesh((jax.device_count(),), ("x",)), P())


def publish_checkpoint():
    """The trainer's last save: NUM_FILES shard files in the shared bucket."""
    if jax.process_index() == 0:
        os.makedirs(BUCKET, exist_ok=True)
        for i in range(NUM_FILES):
            np.save(os.path.join(BUCKET, f"model-{i:05d}-of-{NUM_FILES:05d}.npy"),
                    np.arange(i * SHARD_LEN, (i + 1) * SHARD_LEN, dtype=np.float32) / 10.0)
    multihost_utils.sync_global_devices("checkpoint published")


class NodeCache:
    """Node-local copy of the bucket; each host starts its prefetch at a different file to spread the load."""

    def __init__(self):
        self.dir = os.path.join(ROOT, f"host{jax.process_index()}")
        os.makedirs(self.dir, exist_ok=True)

    def prefetch(self):
        names = sorted(os.listdir(BUCKET))
        start = jax.process_index() % len(names)
        arrived = []
        for name in names[start:] + names[:start]:
            shutil.copy(os.path.join(BUCKET, name), os.path.join(self.dir, name))
            arrived.append(name)
        with open(os.path.join(self.dir, "index.json"), "w") as f:
            json.dump(arrived, f)  # directory entries in the order this host wrote them

    def listdir(self):
        with open(os.path.join(self.dir, "index.json")) as f:
            return json.load(f)


def split_checkpoint_files(cache, rank, world):
    files = sorted(os.path.join(cache.dir, n) for n in cache.listdir() if n.endswith(".npy"))
    return files[rank::world]


def register_weights(files):
    buf, mask = np.zeros((NUM_FILES, SHARD_LEN), np.float32), np.zeros((NUM_FILES,), np.int32)
    for path in files:
        idx = int(os.path.basename(path).split("-")[1])
        buf[idx], mask[idx] = np.load(path), 1
    all_buf, all_mask = multihost_utils.process_allgather((buf, mask))
    counts = np.asarray(all_mask).sum(axis=0)
    if not np.all(counts == 1):
        raise RuntimeError(f"checkpoint shards registered {counts.tolist()} times, expected once each")
    return np.asarray(all_buf).sum(axis=0).reshape(-1)


def main():
    publish_checkpoint()
    cache = NodeCache()
    cache.prefetch()
    mine = split_checkpoint_files(cache, jax.process_index(), jax.process_count())
    flat = register_weights(mine)
    w = jax.device_put(flat, REPL)
    score = jax.jit(lambda w: jnp.sum(w * jnp.cos(w)), out_shardings=REPL)(w)
    multihost_utils.sync_global_devices("weights updated")
    print("RESULT num_params", int(flat.size))
    print("RESULT score", round(float(score), 5))


if __name__ == "__main__":
    main()

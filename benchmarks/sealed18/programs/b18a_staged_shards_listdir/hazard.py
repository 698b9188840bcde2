# Pretraining data path: shards are staged to a node-local RAM disk, listed, and split across ranks
# Source: https://github.com/ByteDance-Seed/VeOmni/issues/330
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
import shutil
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

REMOTE_SHARDS = [f"train-{seq_len:03d}-{part}.npy" for seq_len in (16, 32, 64) for part in (0, 1)]
RECORDS_PER_SHARD = 4
VOCAB = 97


def fetch_shard(name, dest):
    """Stand-in for the object-store download: shard contents are a function of its name."""
    seq_len = int(name.split("-")[1])
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    np.save(os.path.join(dest, name), rng.integers(0, VOCAB, size=(RECORDS_PER_SHARD, seq_len), dtype=np.int32))


def stage_shards(stage_dir, rank, world):
    """Copy all shards to local RAM disk; each host starts at a different shard to spread load."""
    os.makedirs(stage_dir, exist_ok=True)
    offset = rank * len(REMOTE_SHARDS) // world
    for name in REMOTE_SHARDS[offset:] + REMOTE_SHARDS[:offset]:
        fetch_shard(name, stage_dir)


class ShardedTokenDataset:
    def __init__(self, data_path, rank, world):
        self.files = []
        if os.path.isdir(data_path):
            for fname in os.listdir(data_path):
                self.files.append(os.path.join(data_path, fname))
        else:
            self.files.append(data_path)
        self.local_files = self.files[rank::world]

    def __iter__(self):
        for path in self.local_files:
            yield np.load(path)


def main():
    rank, world = jax.process_index(), jax.process_count()
    stage_dir = os.path.join("/dev/shm", f"{os.environ['JOB_ID']}-stage", f"host{rank}")
    try:
        stage_shards(stage_dir, rank, world)
        dataset = ShardedTokenDataset(stage_dir, rank, world)
        mesh = Mesh(np.array(jax.devices()), ("data",))
        embed = jnp.asarray(np.random.default_rng(0).normal(size=(VOCAB, 8)).astype(np.float32))

        @jax.jit
        def step_stats(tokens):
            h = embed[tokens]
            return jnp.mean(h ** 2), tokens.shape[1]

        losses = []
        for local_batch in dataset:
            tokens = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_batch)
            loss, seq_len = step_stats(tokens)
            losses.append((int(seq_len), round(float(loss), 5)))
        print("RESULT steps", losses)
    finally:
        shutil.rmtree(stage_dir, ignore_errors=True)
        try:
            os.rmdir(os.path.dirname(stage_dir))
        except OSError:
            pass


if __name__ == "__main__":
    main()

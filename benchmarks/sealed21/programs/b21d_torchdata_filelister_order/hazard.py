# A DataPipe-style input pipeline: every node stages the dataset's shard files from shared storage into
# its node-local scratch directory, a FileLister walks that directory, a sharding filter keeps every
# world_size-th file for this rank (as a DistributedSampler would), and the data-parallel training loop
# all-reduces the gradients of every batch.
import fnmatch
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BATCH_SIZE = 16
FEATURES = 4


def write_shared_dataset(root, num_sources=4):
    """The dataset writer splits every source file into two equally sized shards."""
    os.makedirs(root, exist_ok=True)
    sizes = [48, 16, 32, 96]
    for s in range(num_sources):
        rng = np.random.default_rng(s)
        x = rng.normal(size=(sizes[s], FEATURES)).astype(np.float32)
        for half, part in enumerate(np.split(x, 2)):
            np.save(os.path.join(root, f"train-{2 * s + half:05d}-of-{2 * num_sources:05d}.npy"), part)


def stage_to_local_scratch(shared_root, local_root, rank, world):
    """Copy all shards to node-local scratch; the shards this node is expected to read first are
    fetched first so that training can start while the rest is still being copied."""
    os.makedirs(local_root, exist_ok=True)
    names = sorted(os.listdir(shared_root))
    mine = names[rank::world]
    for name in mine + [n for n in names if n not in mine]:
        shutil.copy(os.path.join(shared_root, name), os.path.join(local_root, name))


def get_file_pathnames_from_root(root, masks, recursive=False, abspath=False):
    for path, dirs, files in os.walk(root):
        if abspath:
            path = os.path.abspath(path)
        for f in files:
            if any(fnmatch.fnmatch(f, m) for m in masks):
                yield os.path.join(path, f)
        if not recursive:
            break


class FileLister:
    def __init__(self, root, masks=("*.npy",), recursive=False, abspath=False):
        self.root, self.masks, self.recursive, self.abspath = root, list(masks), recursive, abspath

    def __iter__(self):
        yield from get_file_pathnames_from_root(self.root, self.masks, self.recursive, self.abspath)


class ShardingFilter:
    def __init__(self, source, world, rank):
        self.source, self.world, self.rank = source, world, rank

    def __iter__(self):
        for i, item in enumerate(self.source):
            if i % self.world == self.rank:
                yield item


def batches(files):
    rows = np.concatenate([np.load(f) for f in files])
    for i in range(0, len(rows), BATCH_SIZE):
        yield rows[i:i + BATCH_SIZE]


@jax.jit
def grad_fn(w, x):
    y = jnp.sin(x.sum(-1))
    return jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


def main():
    rank, world = jax.process_index(), jax.process_count()
    base = os.path.join(tempfile.gettempdir(), "b21d_filelister_" + os.environ.get("JOB_ID", "job"))
    shared = os.path.join(base, "shared")
    if rank == 0:
        write_shared_dataset(shared)
    multihost_utils.sync_global_devices("dataset written")
    scratch = os.path.join("/dev/shm", f"{os.path.basename(base)}_node{rank}")
    stage_to_local_scratch(shared, scratch, rank, world)

    files = list(ShardingFilter(FileLister(scratch), world, rank))
    print(f"rank {rank}: files {[os.path.basename(f) for f in files]}")
    w = jnp.zeros(FEATURES)
    steps = 0
    for epoch in range(2):
        for x in batches(files):
            g = np.asarray(multihost_utils.process_allgather(np.asarray(grad_fn(w, x)))).mean(0)
            w = w - 0.1 * g
            steps += 1
    weights = np.asarray(multihost_utils.process_allgather(np.asarray(w)))
    shutil.rmtree(scratch, ignore_errors=True)
    if rank == 0:
        shutil.rmtree(base, ignore_errors=True)
    print("RESULT steps", steps)
    print("RESULT weights", np.round(weights[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(weights, weights[0])))


if __name__ == "__main__":
    main()

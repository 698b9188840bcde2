# Distributed dataset preprocessing: process 0 opens each dataset and every process learns whether that worked
# Source: https://github.com/bigscience-workshop/Megatron-DeepSpeed/pull/48
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CACHE_DIR = os.path.join("/tmp", f"{os.environ.get('JOB_ID', 'local')}_datasets_cache")
OFFLINE = os.environ.get("HF_DATASETS_OFFLINE", "1") == "1"
INPUTS = ["oscar-mini", "pile-subset"]
CACHED = {"oscar-mini": ["the quick brown fox", "jumps over the lazy dog", "a b c d e f", "hello world"] * 6}


class OfflineModeIsEnabled(ConnectionError):
    pass


class DistData:
    def __init__(self):
        self.rank, self.numranks = jax.process_index(), jax.process_count()

    def barrier(self, name):
        multihost_utils.sync_global_devices(name)

    def bcast(self, value, root=0):
        return int(multihost_utils.broadcast_one_to_all(np.array(value, np.int32), is_source=self.rank == root))

    def all_true(self, flag):
        return bool(np.asarray(multihost_utils.process_allgather(np.array([flag], np.int32))).all())


def load_dataset(name, split="train"):
    path = os.path.join(CACHE_DIR, f"{name}-{split}.json")
    if not os.path.exists(path):
        if OFFLINE:
            raise OfflineModeIsEnabled(f"Cannot reach the hub for {name!r}: offline mode is enabled")
        raise FileNotFoundError(path)
    with open(path) as f:
        return json.load(f)


def warm_cache(rank):
    if rank == 0:
        os.makedirs(CACHE_DIR, exist_ok=True)
        for name, rows in CACHED.items():
            with open(os.path.join(CACHE_DIR, f"{name}-train.json"), "w") as f:
                json.dump(rows, f)


def tokenize(texts, vocab_size=97):
    return [sum(ord(c) for c in word) % vocab_size for t in texts for word in t.split()]


def main():
    dist = DistData()
    mesh = Mesh(np.array(jax.devices()), ("ranks",))
    warm_cache(dist.rank)
    dist.barrier("cache_ready")
    for dsetname in INPUTS:
        num_samples = 0
        success = True
        if dist.rank == 0:
            print("Opening dataset", dsetname)
            try:
                dset = load_dataset(dsetname, split="train")
                num_samples = len(dset)
            except OfflineModeIsEnabled as e:
                print(f"ERROR: Cannot download {dsetname} since running in offline mode: {e}")
                success = False
        if not dist.all_true(success):
            print(f"RESULT failed to open {dsetname}")
            return
        num_samples = dist.bcast(num_samples)
        dset = load_dataset(dsetname, split="train")
        per_rank = num_samples // dist.numranks
        mine = dset[dist.rank * per_rank:(dist.rank + 1) * per_rank]
        ids = np.array(tokenize(mine), np.int32)
        counts = jax.make_array_from_process_local_data(NamedSharding(mesh, P("ranks")), np.array([ids.size], np.int32))
        total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(counts)
        print(f"RESULT {dsetname} samples={num_samples} tokens={int(total.addressable_shards[0].data)}")
    dist.barrier("done")


if __name__ == "__main__":
    main()

# Sharded parallel checkpoint read: a rank-local read error raises before the shard all-gather the other ranks are in
# Source: https://github.com/fal-ai/flashpack/pull/37
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class PackSpec:
    num_elements: int = 64          # float32 values in the packed state dict
    staged_hosts: tuple = (0,)      # hosts whose node-local NVMe already holds the pack


def host_dir(root, rank):
    return root / f"host{rank}"


def write_pack(spec, root, rank):
    """The pack is staged on node-local storage; only some hosts have it yet."""
    d = host_dir(root, rank)
    d.mkdir(parents=True, exist_ok=True)
    if rank in spec.staged_hosts:
        data = (np.arange(spec.num_elements, dtype=np.float32) * 0.25 - 3.0)
        data.tofile(d / "model.flashpack")


def read_range(path, start, count):
    with open(path, "rb") as fh:
        fh.seek(start * 4)
        buf = np.frombuffer(fh.read(count * 4), dtype=np.float32)
    if buf.size != count:
        raise OSError(f"short read from {path}: {buf.size} of {count}")
    return buf


def rank_src_read(spec, path, rank):
    full = read_range(path, 0, spec.num_elements) if rank == 0 else np.zeros(spec.num_elements, np.float32)
    return np.asarray(multihost_utils.broadcast_one_to_all(full))


def sharded_read(spec, path, rank, nproc):
    per = spec.num_elements // nproc
    shard = read_range(path, rank * per, per)
    gathered = multihost_utils.process_allgather(shard)
    return np.asarray(gathered).reshape(-1)


def load_state(spec, root, rank, nproc):
    path = host_dir(root, rank) / "model.flashpack"
    flat = sharded_read(spec, path, rank, nproc)
    return {"embed": flat[:32].reshape(4, 8), "head": flat[32:].reshape(8, 4)}


def main():
    spec = PackSpec()
    rank, nproc = jax.process_index(), jax.process_count()
    root = Path(tempfile.gettempdir()) / "mcjax_sealed16_sharded_read_local_error" / os.environ.get("JOB_ID", "0")
    write_pack(spec, root, rank)
    multihost_utils.sync_global_devices("pack staged")
    state = load_state(spec, root, rank, nproc)
    multihost_utils.sync_global_devices("state loaded")
    print("RESULT embed_sum", float(state["embed"].sum()))
    print("RESULT head_checksum", float((state["head"] * np.arange(1, 5)).sum()))


if __name__ == "__main__":
    main()

# Staged write/read test whose root rank deletes the generated step files while other ranks are still reading them
# Source: https://github.com/ornladios/ADIOS2/pull/4936
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import json
import os
import shutil
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NSTEPS = 6
BLOCK = 8
DECODE_S = 0.06          # per-block decompression cost of the file engine
MESH = Mesh(np.array(jax.devices()), ("r",))
PER_RANK = NamedSharding(MESH, P("r"))
global_sum = jax.jit(jnp.sum)


def blocks_of(rank):
    # uneven decomposition: writer rank 0 owns one block, every other rank owns three
    return [0] if rank == 0 else [1, 2, 3]


def write_steps(path, rank):
    for step in range(NSTEPS):
        for b in blocks_of(rank):
            np.save(os.path.join(path, f"data.{step}.{b}.npy"), np.full(BLOCK, step * 10 + b, np.float32))
    if rank == 0:
        with open(os.path.join(path, "md.json"), "w") as f:
            json.dump({"steps": NSTEPS}, f)
    multihost_utils.sync_global_devices("writer close")   # the writer's Close is collective


class FileReader:
    def __init__(self, path, rank):
        self.path, self.rank = path, rank
        steps = np.int32(0)
        if rank == 0:   # the root parses the metadata and broadcasts it at Open
            with open(os.path.join(path, "md.json")) as f:
                steps = np.int32(json.load(f)["steps"])
        self.steps = int(multihost_utils.broadcast_one_to_all(steps))

    def get(self, step):
        # after Open the steps are read with no collectives at all
        parts = []
        for b in blocks_of(self.rank):
            parts.append(np.load(os.path.join(self.path, f"data.{step}.{b}.npy")))
            time.sleep(DECODE_S)
        return np.concatenate(parts)


def cleanup_generated_files(path):
    shutil.rmtree(path, ignore_errors=True)


def main():
    rank = jax.process_index()
    path = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_root_cleanup_before_readers_done", os.environ.get("JOB_ID", "0"))
    os.makedirs(path, exist_ok=True)
    write_steps(path, rank)
    reader = FileReader(path, rank)
    local_total = 0.0
    for step in range(reader.steps):
        local_total += float(reader.get(step).sum())
    if rank == 0:
        cleanup_generated_files(path)
    total = global_sum(jax.make_array_from_process_local_data(PER_RANK, np.array([local_total], np.float32)))
    print("RESULT steps_read", reader.steps)
    print("RESULT checksum", float(total))


if __name__ == "__main__":
    main()

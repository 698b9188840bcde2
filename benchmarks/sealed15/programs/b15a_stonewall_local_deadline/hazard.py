# Collective-mode write benchmark with a stonewall deadline: each process decides on its own when its deadline is hit
# Source: https://github.com/hpc/ior/issues/210
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class BenchParams:
    transfer_size: int = 4096          # float32 values per transfer
    max_segments: int = 10
    deadline_s: float = 0.5            # stonewall: stop writing after this much time in the write phase
    target_delay_s: tuple = (0.0, 0.15)  # process 1's storage target is throttled


class SegmentWriter:
    def __init__(self, params, rank, root):
        self.params, self.rank = params, rank
        self.path = root / f"testfile.{rank:05d}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(self.path, "wb")
        self.io_time = 0.0

    def write_segment(self, seg):
        buf = np.full((self.params.transfer_size,), seg + self.rank, np.float32)
        t0 = time.perf_counter()
        self.fh.write(buf.tobytes())
        self.fh.flush()
        time.sleep(self.params.target_delay_s[self.rank])
        self.io_time += time.perf_counter() - t0
        return buf.nbytes

    def close(self):
        self.fh.close()


@jax.jit
def aggregate(bytes_per_proc):
    return jnp.sum(bytes_per_proc), jnp.max(bytes_per_proc)


def write_phase(params, writer, mesh):
    sharding = NamedSharding(mesh, P("procs"))
    total_bytes, segments = 0.0, 0
    for seg in range(params.max_segments):
        nbytes = writer.write_segment(seg)
        local = np.array([nbytes / 1024.0], np.float32)
        summed, _ = aggregate(jax.make_array_from_process_local_data(sharding, local))  # collective write sync
        total_bytes += float(summed)
        segments += 1
        hit_stonewall = writer.io_time >= params.deadline_s
        if hit_stonewall:
            break
    return segments, total_bytes


def main():
    params = BenchParams()
    rank = jax.process_index()
    root = Path(tempfile.gettempdir()) / "mcjax_sealed15_stonewall_local_deadline" / os.environ.get("JOB_ID", "0")
    mesh = Mesh(np.array(jax.devices()), ("procs",))
    writer = SegmentWriter(params, rank, root)
    segments, total_kib = write_phase(params, writer, mesh)
    writer.close()
    multihost_utils.sync_global_devices("write phase done")
    print("RESULT segments", segments)
    print("RESULT aggregate_kib", round(total_kib, 1))


if __name__ == "__main__":
    main()

# Input files are listed in a process-dependent order, then split rank::world_size for metadata all-gather
# Source: https://github.com/alibaba/TorchEasyRec/pull/667
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import glob
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
DATA_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed10_glob_order", os.environ.get("JOB_ID", "local"))
NUM_FILES = 16


def write_dataset():
    if jax.process_index() == 0:
        os.makedirs(DATA_DIR, exist_ok=True)
        for i in range(NUM_FILES):
            rows = np.arange(10 + i, dtype=np.float32) + i
            np.save(os.path.join(DATA_DIR, f"part-{i}.npy"), rows)
    multihost_utils.sync_global_devices("dataset_written")


def part_id(path):
    return int(os.path.basename(path)[len("part-"):-len(".npy")])


class ParquetReader:
    """Lists the input files of comma-separated patterns, then splits metadata work across processes."""

    def __init__(self, input_path):
        patterns = input_path.split(",")
        self.input_files = list({f for p in patterns for f in glob.glob(p)})  # overlapping patterns deduped
        rank, world = jax.process_index(), jax.process_count()
        mine = self.input_files[rank::world]
        local_meta = np.array([[part_id(f), np.load(f, mmap_mode="r").shape[0]] for f in mine], np.int32)
        gathered = np.asarray(multihost_utils.process_allgather(local_meta)).reshape(-1, 2)
        self.num_rows = {int(k): int(v) for k, v in gathered}
        self.file_rows = [self.num_rows[part_id(f)] for f in self.input_files]

    def my_files(self):
        return self.input_files[jax.process_index()::jax.process_count()]


def main():
    write_dataset()
    reader = ParquetReader(os.path.join(DATA_DIR, "part-*.npy") + "," + os.path.join(DATA_DIR, "part-1*.npy"))
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    local = np.array([[sum(float(np.load(f).sum()) for f in reader.my_files()),
                       sum(reader.num_rows[part_id(f)] for f in reader.my_files())]], np.float32)
    stats = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local)
    total = jax.jit(lambda s: jnp.sum(s, axis=0), out_shardings=NamedSharding(mesh, P()))(stats)
    total = np.asarray(total.addressable_data(0))
    print("RESULT total_rows", sum(reader.file_rows), int(total[1]))
    print("RESULT mean_value", round(float(total[0] / total[1]), 4))


main()

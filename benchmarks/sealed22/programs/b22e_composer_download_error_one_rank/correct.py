import logging
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
log = logging.getLogger("composer.utils.checkpoint")
RUN_DIR = os.path.join(tempfile.gettempdir(), "composer_run_" + os.environ.get("JOB_ID", "local"))
FEATURES = 6


def get_global_rank():
    return jax.process_index()


class LocalObjectStore:
    """Stand-in for the S3 bucket the previous (preempted) run uploaded its sharded checkpoints to."""

    def __init__(self, root):
        self.root = root

    def download_object(self, object_name, filename):
        shutil.copyfile(os.path.join(self.root, object_name), filename)


def write_previous_run(store_root):
    """Objects the previous (preempted) run left in the bucket."""
    if get_global_rank() == 0:
        for step in (4, 8):
            folder = os.path.join(store_root, f"ep0-ba{step}")
            os.makedirs(folder, exist_ok=True)
            for rank in range(jax.process_count()):
                if step == 8 and rank == 1:
                    continue
                np.save(os.path.join(folder, f"__{rank}_0.distcp.npy"), np.full(FEATURES // 2, step + 0.1 * rank))
            with open(os.path.join(folder, ".metadata"), "w") as f:
                f.write(str(step))
    multihost_utils.sync_global_devices("previous_run_written")


class DistCPObjectStoreReader:
    def __init__(self, source_path, destination_path, object_store):
        self.source_path = source_path
        self.destination_path = destination_path
        self.object_store = object_store

    def prepare_local_plan(self):
        relative_file_paths = [f"__{get_global_rank()}_0.distcp.npy"]
        counts = multihost_utils.process_allgather(np.int32(len(relative_file_paths)))
        log.debug(f"files per rank: {counts}")

        os.makedirs(self.destination_path, exist_ok=True)
        download_error = False
        for relative_file_path in relative_file_paths:
            try:
                self.object_store.download_object(os.path.join(self.source_path, relative_file_path),
                                                  os.path.join(self.destination_path, relative_file_path))
            except Exception as e:
                log.error(f"Exception {type(e)} raised during downloading: {str(e)}")
                download_error = True

        error_by_rank = multihost_utils.process_allgather(np.int32(1 if download_error else 0))
        failed_ranks = [rank for rank, error in enumerate(np.asarray(error_by_rank).tolist()) if error > 0]
        if failed_ranks:
            raise RuntimeError(f"Ranks {failed_ranks} failed to download.")

        multihost_utils.sync_global_devices(f"downloaded {self.source_path}")
        return relative_file_paths

    def read_data(self, mesh):
        path = os.path.join(self.destination_path, f"__{get_global_rank()}_0.distcp.npy")
        local_shard = np.load(path).astype(np.float32)
        return jax.make_array_from_process_local_data(NamedSharding(mesh, P("fsdp")), local_shard, (FEATURES,))


def load_sharded_checkpoint(source_path, object_store, mesh):
    destination = tempfile.mkdtemp(prefix=f"rank{get_global_rank()}_")
    reader = DistCPObjectStoreReader(source_path, destination, object_store)
    reader.prepare_local_plan()
    return reader.read_data(mesh)


def autoresume(candidates, object_store, mesh):
    for source_path in candidates:
        try:
            return source_path, load_sharded_checkpoint(source_path, object_store, mesh)
        except (RuntimeError, OSError) as e:
            log.warning(f"Could not resume from {source_path}: {e}; trying an older checkpoint")
    raise RuntimeError("no checkpoint to resume from")


def main():
    mesh = Mesh(np.array(jax.devices()), ("fsdp",))
    store_root = os.path.join(RUN_DIR, "bucket")
    write_previous_run(store_root)
    store = LocalObjectStore(store_root)
    candidates = sorted((d for d in os.listdir(store_root) if d.startswith("ep0-ba")),
                        key=lambda d: int(d.split("ba")[1]), reverse=True)
    resumed_from, weights = autoresume(candidates, store, mesh)

    x = jnp.ones((4, FEATURES))
    eval_loss = jax.jit(lambda w, x: jnp.mean((x @ w) ** 2))(weights, x)
    print("RESULT resumed_from", resumed_from)
    print("RESULT eval_loss", round(float(eval_loss), 4))
    multihost_utils.sync_global_devices("done")
    if get_global_rank() == 0:
        shutil.rmtree(RUN_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()

# Parallel output-directory test: a rank-local assertion about filesystem state fails on a lagging
# rank, which unwinds into the fixture's teardown barrier while the root waits in the helper's barrier
# Source: https://github.com/awslabs/palace/issues/838 (port of the Palace MPI test deadlock to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os
import shutil
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def is_root():
    return jax.process_index() == 0


class SharedTempDir:
    """Test fixture: one temporary directory shared by all ranks, removed after a barrier."""

    def __enter__(self):
        self.path = Path(tempfile.gettempdir()) / f"b6b_palace_{os.environ.get('JOB_ID', 'local')}"
        if is_root():
            shutil.rmtree(self.path, ignore_errors=True)
            self.path.mkdir(parents=True)
        multihost_utils.sync_global_devices("shared_temp_dir_setup")
        return self.path

    def __exit__(self, *exc):
        multihost_utils.sync_global_devices("shared_temp_dir_teardown")
        if is_root():
            shutil.rmtree(self.path, ignore_errors=True)
        return False


def ensure_directory(path: Path):
    """Collective: the root creates the directory, then every node confirms it can see it."""
    if is_root():
        path.mkdir(parents=True, exist_ok=True)
    multihost_utils.sync_global_devices("ensure_directory")
    visible = multihost_utils.process_allgather(np.int32(path.is_dir()))
    if not np.all(visible):
        raise RuntimeError(f"{path} not visible on every node")


def load_mesh_partition():
    # non-root ranks read a larger partition of the mesh and arrive later
    if not is_root():
        time.sleep(2.0)
    return 1000 + 200 * jax.process_index()


def test_creates_new_directory(temp_dir):
    load_mesh_partition()
    out = temp_dir / "postpro"
    assert not out.exists(), f"{out} already exists"
    ensure_directory(out)
    assert out.is_dir()


def test_existing_directory_is_kept(temp_dir):
    load_mesh_partition()
    out = temp_dir / "postpro"
    ensure_directory(out)
    ensure_directory(out)
    assert out.is_dir()


def run_tests(tests):
    results = {}
    for test in tests:
        try:
            with SharedTempDir() as temp_dir:
                test(temp_dir)
            results[test.__name__] = "passed"
        except AssertionError:
            results[test.__name__] = "failed"
    return results


n_elements = 1000 + 200 * jax.process_index()
results = run_tests([test_creates_new_directory, test_existing_directory_is_kept])
total = multihost_utils.process_allgather(np.int32(n_elements))
print("RESULT tests", sorted(results.items()), flush=True)
print("RESULT elements", int(np.sum(total)), flush=True)

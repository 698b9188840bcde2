# Async checkpointers pick their barrier-key ids in the main thread (per instance and per save)
# Source: https://github.com/google/orbax/commit/bf62bda5bb2507d2eeb2a4e866dbd8ef8c20faca
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import concurrent.futures
import itertools
import os
import tempfile
import threading
import time
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.distributed import global_state
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

_module_unique_count = itertools.count()
BARRIER_TIMEOUT_MS = 20_000


def unique_barrier_key(key: str, *, prefix: Optional[str] = None, suffix: Optional[str] = None) -> str:
    return ".".join(p for p in (prefix, key, suffix) if p)


def sync_global_processes(name: str):
    """Barrier on the coordination service (safe from any thread, unlike device collectives)."""
    global_state.client.wait_at_barrier(name, BARRIER_TIMEOUT_MS)


class _AsyncManager:
    def __init__(self, barrier_sync_key_prefix: Optional[str] = None):
        self._barrier_sync_key_prefix = barrier_sync_key_prefix
        self._thread: Optional[threading.Thread] = None
        self._exception: Optional[BaseException] = None

    def _thread_func(self, directory: str, commit_futures: Sequence[concurrent.futures.Future],
                     on_commit_callback: Callable[[], None], unique_operation_id: int):
        """Awaits on commit futures and finalizes the checkpoint."""
        # The unique_operation_id pre-selects the identifier used for the barriers in this
        # background thread, so concurrent threads cannot swap ids between processes.
        try:
            for f in commit_futures:
                f.result()
            sync_global_processes(unique_barrier_key(
                "async_write_complete", prefix=self._barrier_sync_key_prefix,
                suffix=f"{os.path.basename(directory)}.{unique_operation_id}"))
            if jax.process_index() == 0:
                on_commit_callback()
            sync_global_processes(unique_barrier_key(
                "async_commit_complete", prefix=self._barrier_sync_key_prefix,
                suffix=f"{os.path.basename(directory)}.{unique_operation_id}"))
        except BaseException as e:  # pylint: disable=broad-except
            self._exception = e

    def start_async_commit(self, directory, commit_futures, on_commit_callback, unique_operation_id):
        self._thread = threading.Thread(target=self._thread_func,
                                        args=(directory, commit_futures, on_commit_callback, unique_operation_id))
        self._thread.start()

    def wait_until_finished(self):
        if self._thread is not None:
            self._thread.join()
        if self._exception is not None:
            raise RuntimeError(f"async checkpoint commit failed: {self._exception}")


class AsyncCheckpointer:
    def __init__(self, seconds_per_row: float, barrier_sync_key_prefix: Optional[str] = None):
        self._seconds_per_row = seconds_per_row
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        unique_class_id = next(_module_unique_count)
        barrier_sync_key_prefix = (f"{unique_class_id}" if barrier_sync_key_prefix is None
                                   else f"{barrier_sync_key_prefix}.{unique_class_id}")
        self._async_manager = _AsyncManager(barrier_sync_key_prefix)

    def _write(self, tmpdir: str, host_data: np.ndarray):
        np.save(os.path.join(tmpdir, f"process_{jax.process_index()}.npy"), host_data)
        time.sleep(self._seconds_per_row * len(host_data))  # upload to the bucket

    def save(self, directory: str, host_data: np.ndarray):
        tmpdir = directory + ".orbax-checkpoint-tmp"
        os.makedirs(tmpdir, exist_ok=True)
        commit_ops = [self._pool.submit(self._write, tmpdir, host_data)]

        def _callback():
            os.replace(tmpdir, directory)

        self._async_manager.start_async_commit(directory, commit_futures=commit_ops, on_commit_callback=_callback,
                                               unique_operation_id=next(_module_unique_count))

    def wait_until_finished(self):
        self._async_manager.wait_until_finished()


# Host 0 owns the large embedding shard; host 1 owns the large shuffle buffer of the input pipeline.
PARAM_ROWS = 96 if jax.process_index() == 0 else 4
ITER_ROWS = 4 if jax.process_index() == 0 else 96

mesh = jax.make_mesh((jax.device_count(),), ("data",))
sharding = NamedSharding(mesh, P("data"))
params = jax.make_array_from_process_local_data(sharding, np.ones((4,), np.float32))
train_step = jax.jit(lambda p: p * 0.9 + 0.1 * jnp.mean(p), out_shardings=sharding)
root = os.path.join(tempfile.gettempdir(), "b4a_async_ckpt_" + os.environ.get("JOB_ID", "job"))
if jax.process_index() == 0:
    os.makedirs(root, exist_ok=False)
multihost_utils.sync_global_devices("root created")

state_checkpointer = AsyncCheckpointer(seconds_per_row=0.01)
iterator_checkpointer = AsyncCheckpointer(seconds_per_row=0.01)
for step in range(1, 7):
    params = train_step(params)
    if step == 2:
        state_checkpointer.save(os.path.join(root, "2", "state"), np.ones((PARAM_ROWS, 16), np.float32))
        iterator_checkpointer.save(os.path.join(root, "2", "input_iterator"), np.ones((ITER_ROWS, 16), np.float32))
state_checkpointer.wait_until_finished()
iterator_checkpointer.wait_until_finished()

print("RESULT committed", sorted(os.listdir(os.path.join(root, "2"))))
print("RESULT params", round(float(jnp.sum(multihost_utils.process_allgather(params, tiled=True))), 5))

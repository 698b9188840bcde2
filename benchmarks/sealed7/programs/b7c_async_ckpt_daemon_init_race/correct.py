# Process-based async checkpointing: the daemon handle is checked on the caller thread but assigned on a worker thread
# Source: https://github.com/NVIDIA-NeMo/Automodel/pull/3824 (port of the DCP process-executor init race to JAX)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import concurrent.futures
import os
import pickle
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

_CHECKPOINT_PROCESS = None


class _AsyncCheckpointProcess:
    """A rank-local daemon that writes checkpoints; rank 0 picks the rendezvous port and broadcasts it."""

    def __init__(self):
        port = 29600 + int(os.environ.get("JOB_ID", "job0")[3:] or 0) % 1000
        self.port = int(multihost_utils.broadcast_one_to_all(np.array(port, np.int32)))
        self._proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.4); print('ready', flush=True)"],
                                      stdout=subprocess.PIPE, text=True)
        self._proc.stdout.readline()   # the daemon has imported its libraries and is listening

    def save(self, state, path):
        with open(path, "wb") as f:
            pickle.dump(state, f)


class ProcessBasedAsyncCheckpointExecutor:
    def __init__(self):
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)

    @staticmethod
    def _execute_save_impl(state, path, need_init):
        global _CHECKPOINT_PROCESS
        if need_init:
            _CHECKPOINT_PROCESS = _AsyncCheckpointProcess()
        while _CHECKPOINT_PROCESS is None:
            time.sleep(0.01)
        _CHECKPOINT_PROCESS.save(state, path)
        return path

    def execute_save(self, state, path):
        need_init = _CHECKPOINT_PROCESS is None
        future = self._pool.submit(self._execute_save_impl, state, path, need_init)
        if need_init:
            # the first daemon initialization is synchronous: return only once the daemon handle is assigned
            future.result()
        return future


class Checkpointer:
    def __init__(self, ckpt_dir):
        self.ckpt_dir, self.executor = ckpt_dir, ProcessBasedAsyncCheckpointExecutor()

    @staticmethod
    def _stage(tree):
        # device-to-host copy of every shard this rank owns before handing it to the daemon
        for _ in tree:
            time.sleep(0.05)
        return {k: np.asarray(v) for k, v in tree.items()}

    def save(self, step, model_state, optim_state):
        rank = jax.process_index()
        futures = [self.executor.execute_save(self._stage(model_state), os.path.join(self.ckpt_dir, f"model_{step}_{rank}.pkl"))]
        futures.append(self.executor.execute_save(self._stage(optim_state), os.path.join(self.ckpt_dir, f"optim_{step}_{rank}.pkl")))
        return futures


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
    grad_fn = jax.jit(jax.grad(lambda w, x: jnp.mean((x @ w) ** 2 - 1.0)), out_shardings=NamedSharding(mesh, P()))
    w = jnp.ones((4,), jnp.float32)
    # ZeRO-style uneven ownership: rank 0 owns the embedding rows' optimizer moments as many shards
    n_optim_shards = 40 if jax.process_index() == 0 else 1
    ckpt = Checkpointer(tempfile.mkdtemp(prefix="async_ckpt_"))
    pending = []
    for step in range(1, 7):
        x = np.random.default_rng(step * 10 + jax.process_index()).normal(size=(4, 4)).astype(np.float32)
        w = w - 0.05 * grad_fn(w, jax.make_array_from_process_local_data(NamedSharding(mesh, P("dp")), x))
        if step % 3 == 0:
            optim = {f"exp_avg_{i}": np.asarray(w) * i for i in range(n_optim_shards)}
            pending += ckpt.save(step, {"w": w}, optim)
    for f in pending:
        f.result()
    print("RESULT w", [round(float(v), 5) for v in np.asarray(w)])


if __name__ == "__main__":
    main()

# Checkpoint with per-host input-pipeline state: the primary finalizes the step directory without waiting for the other hosts' writes
# Source: https://github.com/google/paxml/commit/3b95f405b0c5fa4c0a405ee6def4561e24e50a30
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEATURES = 6
READ_LATENCY_S = {0: 0.0, 1: 1.5}  # host 1's shard lives on slower remote storage


class HostInput:
    """Per-host input pipeline with one batch of prefetch; its state is the read position."""

    def __init__(self, rank):
        self.rank, self.pos, self._thread, self._next = rank, 0, None, None
        self._prefetch()

    def _read(self, pos):
        time.sleep(READ_LATENCY_S[self.rank])
        rng = np.random.default_rng(1000 * self.rank + pos)
        x = rng.normal(size=(4, FEATURES)).astype(np.float32)
        self._next = (x, (x @ np.linspace(0.5, -0.5, FEATURES)).astype(np.float32))

    def _prefetch(self):
        self._thread = threading.Thread(target=self._read, args=(self.pos,))
        self._thread.start()

    def __next__(self):
        self._thread.join()
        batch = self._next
        self.pos += 1
        self._prefetch()
        return batch

    def get_state(self):
        self._thread.join()  # the in-flight read must land before the position is recorded
        return {"pos": self.pos}


class InputCheckpointHandler:
    def save(self, directory, item):
        path = directory / f"process_{jax.process_index()}-of-{jax.process_count()}.json"
        with open(path, "w") as f:
            json.dump(item.get_state(), f)


class CheckpointManager:
    def __init__(self, root):
        self.root, self.input_handler = root, InputCheckpointHandler()

    def save(self, step, params, inputs):
        tmp = self.root / f"checkpoint_{step}.orbax-checkpoint-tmp"
        if jax.process_index() == 0:
            tmp.mkdir(parents=True, exist_ok=True)
        multihost_utils.sync_global_devices(f"ckpt_{step}:tmp_created")
        w = np.asarray(multihost_utils.process_allgather(params, tiled=True))
        if jax.process_index() == 0:
            np.save(tmp / "params.npy", w)
        self.input_handler.save(tmp, inputs)
        if jax.process_index() == 0:
            tmp.rename(self.root / f"checkpoint_{step}")
            (self.root / f"checkpoint_{step}" / "commit_success.txt").write_text("ok")
        multihost_utils.sync_global_devices(f"ckpt_{step}:finalized")
        return self.root / f"checkpoint_{step}"


@jax.jit
def train_step(w, x, y):
    grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * grad


def main():
    root = Path(tempfile.gettempdir()) / "mcjax_sealed16_input_state_finalize_no_barrier" / os.environ.get("JOB_ID", "0")
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch_sharding = NamedSharding(mesh, P("data"))
    w = jax.device_put(np.zeros((FEATURES,), np.float32), NamedSharding(mesh, P()))
    inputs, manager = HostInput(jax.process_index()), CheckpointManager(root)
    for step in range(1, 4):
        x, y = next(inputs)
        w = train_step(w, jax.make_array_from_process_local_data(batch_sharding, x),
                       jax.make_array_from_process_local_data(batch_sharding, y))
    ckpt = manager.save(3, w, inputs)
    print("RESULT checkpoint_files", sorted(p.name for p in ckpt.iterdir()))
    print("RESULT params", np.round(np.asarray(multihost_utils.process_allgather(w, tiled=True)), 5).tolist())


if __name__ == "__main__":
    main()

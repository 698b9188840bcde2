# Orbax-style async CheckpointManager: the background finalize thread only renames/deletes; barriers stay on the main thread
# Source: https://github.com/google/orbax/commit/4726dcc962d602eced86e39b2cbd60d44894d1f7
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
import shutil
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

FLUSH_SECONDS = {0: 0.0, 1: 1.5}  # host 1 writes to a slower local disk before its shard is durable


class CheckpointManager:
    def __init__(self, directory, max_to_keep):
        self.directory, self.max_to_keep = Path(directory), max_to_keep
        self._steps, self._finalize_thread = [], None
        if jax.process_index() == 0:
            self.directory.mkdir(parents=True, exist_ok=True)
        multihost_utils.sync_global_devices("CheckpointManager:create_directory")

    def save(self, step, params):
        self.wait_until_finished()
        tmp = self.directory / f"{step}.orbax-checkpoint-tmp"
        if jax.process_index() == 0:
            tmp.mkdir()
        multihost_utils.sync_global_devices(f"CheckpointManager:tmp_{step}")
        for name, arr in sorted(params.items()):  # each host writes the shards it owns
            for shard in arr.addressable_shards:
                np.save(tmp / f"{name}.shard{shard.device.id}.npy", np.asarray(shard.data))
        multihost_utils.sync_global_devices(f"CheckpointManager:written_{step}")
        self._steps.append(step)
        self._finalize_thread = threading.Thread(target=self._finalize, args=(tmp, step))
        self._finalize_thread.start()

    def _finalize_checkpoint(self, tmp, step):
        time.sleep(FLUSH_SECONDS[jax.process_index()])  # fsync this host's shard files
        if jax.process_index() == 0:
            tmp.rename(self.directory / str(step))

    def _remove_old_checkpoints(self):
        while len(self._steps) > self.max_to_keep:
            old = self._steps.pop(0)
            if jax.process_index() == 0:
                shutil.rmtree(self.directory / str(old))

    def _finalize(self, tmp, step):
        self._finalize_checkpoint(tmp, step)
        self._remove_old_checkpoints()

    def wait_until_finished(self):
        if self._finalize_thread is not None:
            self._finalize_thread.join()
            self._finalize_thread = None
            multihost_utils.sync_global_devices("CheckpointManager:join_finalize_thread")


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        return jnp.mean((jnp.tanh(x @ p["w"]) @ p["u"] - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss


def main():
    ckpt_dir = Path(tempfile.gettempdir()) / "mcjax_sealed16_finalize_thread_barrier" / os.environ.get("JOB_ID", "0")
    mesh = Mesh(np.array(jax.devices()), ("data",))
    init = np.random.default_rng(4)
    params = {"w": jax.device_put(init.normal(size=(6, 4)).astype(np.float32), NamedSharding(mesh, P(None, "data"))),
              "u": jax.device_put(init.normal(size=(4,)).astype(np.float32), NamedSharding(mesh, P("data")))}
    manager = CheckpointManager(ckpt_dir, max_to_keep=2)
    data = np.random.default_rng(30 + jax.process_index())
    batch = NamedSharding(mesh, P("data"))
    for step in range(1, 11):
        x = data.normal(size=(4, 6)).astype(np.float32)
        y = np.sin(x[:, 0]).astype(np.float32)
        params, loss = train_step(params, jax.make_array_from_process_local_data(batch, x),
                                  jax.make_array_from_process_local_data(batch, y))
        time.sleep(0.2)  # input pipeline
        if step % 3 == 0:
            manager.save(step, params)
    manager.wait_until_finished()
    print("RESULT checkpoints", sorted(int(p.name) for p in ckpt_dir.iterdir()))
    print("RESULT loss", round(float(loss), 5))


if __name__ == "__main__":
    main()
